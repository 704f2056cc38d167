// Applies the migrations to a PGlite data folder in a process of its own, which then exits: a first
// start (PostgreSQL's initdb) and migrations grow PGlite's WebAssembly heap to some 600 MB, and only
// a process that ends gives all of it back (a thread leaves the C library's arenas behind). The
// server opens the folder afterwards in its long-lived thread, as small as on any later start.
// `node migrate-process.ts <data folder> <shared buffers>`: exit 0 when done; else the error as one
// JSON line ({name, message, fields}) on stderr and exit 1.
import { migrate } from "../migrate.ts";
import { createPglite } from "./create-pglite.ts";
import { pgliteSession } from "./pglite-session.ts";
import { errorData } from "./thread-messages.ts";

const [dataDir, sharedBuffers] = process.argv.slice(2);
if (!dataDir || !sharedBuffers) {
  process.stderr.write(
    `${JSON.stringify(errorData(new Error("usage: migrate-process.ts <dir> <buffers>")))}\n`,
  );
  process.exit(1);
}

try {
  const db = await createPglite(dataDir, sharedBuffers);
  await migrate(pgliteSession(db));
  await db.close();
  process.exit(0);
} catch (error) {
  process.stderr.write(`${JSON.stringify(errorData(error, dataDir))}\n`);
  process.exit(1);
}
