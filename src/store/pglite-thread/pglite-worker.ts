// The PGlite thread: owns the embedded database and runs every statement the request thread sends.
// PostgreSQL compiled to WebAssembly runs synchronously where it lives; here, its work never holds
// a request. One transaction at a time, as PGlite itself serialises them.
import { parentPort, workerData } from "node:worker_threads";
import type { ParserOptions, PGlite, Results, Transaction } from "@electric-sql/pglite";
import { createPglite } from "./create-pglite.ts";
import { NamedStatements } from "./named-statements.ts";
import {
  errorData,
  type ThreadAnswer,
  type ThreadCall,
  type ThreadOptions,
  type ThreadReady,
} from "./thread-messages.ts";

const port = parentPort;
if (!port) throw new Error("pglite-worker.ts runs as a worker thread");
const options = workerData as ThreadOptions;

const identity = (value: string) => value;
const parserSets = new Map<string, ParserOptions>();

/** Parsers that keep the named types as PostgreSQL's text (what Drizzle asks for), built once per set. */
function parsersFor(types: number[]): ParserOptions {
  const key = types.join(",");
  let parsers = parserSets.get(key);
  if (!parsers) {
    parsers = Object.fromEntries(types.map((type) => [type, identity]));
    parserSets.set(key, parsers);
  }
  return parsers;
}

interface OpenTransaction {
  tx: Transaction;
  finish: (commit: boolean) => void;
  done: Promise<unknown>;
}

class Rollback extends Error {}

let db: PGlite;
try {
  db = await createPglite(options.dataDir, options.sharedBuffers, options.template);
} catch (error) {
  port.postMessage({ ready: false, error: errorData(error, options.dataDir) } satisfies ThreadReady);
  process.exit(1);
}

const named = new NamedStatements(db);
const transactions = new Map<number, OpenTransaction>();
let nextTransaction = 1;

/** Opens a transaction that stays open until the request thread ends it (commit or rollback). */
function begin(): Promise<number> {
  return new Promise((opened, failed) => {
    const id = nextTransaction++;
    let finish: (commit: boolean) => void = () => {};
    const ended = new Promise<boolean>((resolve) => {
      finish = resolve;
    });
    const done = db
      .transaction(async (tx) => {
        transactions.set(id, { tx, finish, done });
        opened(id);
        if (!(await ended)) throw new Rollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof Rollback)) throw error;
      })
      .finally(() => transactions.delete(id));
    // A transaction that could not even begin fails the call that asked for it.
    done.catch(failed);
  });
}

async function end(id: number, commit: boolean): Promise<void> {
  const open = transactions.get(id);
  if (!open) throw new Error(`no open transaction ${id}`);
  open.finish(commit);
  await open.done;
}

function target(tx: number | undefined): Pick<Transaction, "query" | "exec"> {
  if (tx === undefined) return db;
  const open = transactions.get(tx);
  if (!open) throw new Error(`no open transaction ${tx}`);
  return open.tx;
}

/** What crosses back of a result: the parts Drizzle reads (PGlite's object holds more). */
function plain(result: Results<unknown>) {
  return { rows: result.rows, fields: result.fields, affectedRows: result.affectedRows };
}

async function run(call: ThreadCall): Promise<unknown> {
  switch (call.op) {
    case "query": {
      const result = await target(call.tx).query(call.text, call.params, {
        rowMode: call.rowMode,
        parsers: parsersFor(call.rawTypes),
      });
      return plain(result);
    }
    case "exec":
      return (await target(call.tx).exec(call.text)).map(plain);
    case "named":
      return named.run(call.name, call.text, call.params);
    case "begin":
      return begin();
    case "end":
      return end(call.tx, call.commit);
    case "dump":
      return new Uint8Array(await (await db.dumpDataDir("none")).arrayBuffer());
    case "close":
      await db.close();
      return undefined;
  }
}

port.on("message", (call: ThreadCall) => {
  run(call).then(
    (result) => {
      port.postMessage({ id: call.id, ok: true, result } satisfies ThreadAnswer);
      // Closed: the thread ends by itself once its port is closed, rather than being terminated
      // while the engine's WebAssembly memory is torn down.
      if (call.op === "close") port.close();
    },
    (error: unknown) =>
      port.postMessage({ id: call.id, ok: false, error: errorData(error) } satisfies ThreadAnswer),
  );
});
port.postMessage({ ready: true } satisfies ThreadReady);
