import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";

/**
 * Opens PGlite as Zona runs it, in the thread and in the migration process alike: pgvector loaded
 * (a 50 kB bundle; migration 0008 creates the extension) and a small pool of shared buffers.
 * PostgreSQL's default 128 MB would sit in the process's memory (the WebAssembly heap); the
 * operating system caches the data folder anyway, so a small pool costs little speed.
 */
export function createPglite(dataDir: string | undefined, sharedBuffers: string): Promise<PGlite> {
  return PGlite.create({
    ...(dataDir === undefined ? {} : { dataDir }),
    extensions: { vector },
    startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${sharedBuffers}`],
  });
}
