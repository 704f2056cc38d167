import { PGlite } from "@electric-sql/pglite";
import { vector } from "@electric-sql/pglite-pgvector";

/**
 * Opens PGlite as Zona runs it, in the thread and in the migration process alike: pgvector loaded
 * (a 50 kB bundle; migration 0008 creates the extension) and a small pool of shared buffers.
 * PostgreSQL's default 128 MB would sit in the process's memory (the WebAssembly heap); the
 * operating system caches the data folder anyway, so a small pool costs little speed.
 * `template`, a dump of another database, is where a new one starts instead of an empty cluster.
 */
export function createPglite(
  dataDir: string | undefined,
  sharedBuffers: string,
  template?: Uint8Array,
): Promise<PGlite> {
  return PGlite.create({
    ...(dataDir === undefined ? {} : { dataDir }),
    ...(template === undefined ? {} : { loadDataDir: new Blob([template as Uint8Array<ArrayBuffer>]) }),
    extensions: { vector },
    startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${sharedBuffers}`],
  });
}
