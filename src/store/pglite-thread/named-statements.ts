import { type PGlite, parse, protocol } from "@electric-sql/pglite";

type BackendMessage = Awaited<ReturnType<PGlite["execProtocolStream"]>>[number];

/**
 * Statements run by name, as a PostgreSQL connection runs named prepared statements: each is parsed
 * and planned once, then only bound and executed. PGlite's own `query` parses and plans its text at
 * every call, which for the usage batch costs as much as running it.
 */
export class NamedStatements {
  private readonly db: PGlite;
  private readonly parsed = new Map<string, string>();

  constructor(db: PGlite) {
    this.db = db;
  }

  /** Runs the statement `name` (parsed from `text` on first use) alone, in a transaction of its own. */
  run(name: string, text: string, params: unknown[]): Promise<{ rows: unknown[] }> {
    return this.db._runExclusiveTransaction(() =>
      this.db._runExclusiveQuery(async () => {
        const messages: BackendMessage[] = [];
        try {
          const known = this.parsed.get(name);
          if (known !== undefined && known !== text) throw new Error(`statement ${name} has another text`);
          if (known === undefined) {
            messages.push(...(await this.send(protocol.serialize.parse({ name, text }))));
            this.parsed.set(name, text);
          }
          messages.push(
            ...(await this.send(protocol.serialize.bind({ statement: name, values: params.map(wireValue) }))),
            ...(await this.send(protocol.serialize.describe({ type: "P" }))),
            ...(await this.send(protocol.serialize.execute({}))),
          );
        } finally {
          messages.push(...(await this.send(protocol.serialize.sync())));
        }
        if (!this.db.isInTransaction()) await this.db.syncToFs();
        const results = parse.parseResults(messages, this.db.parsers);
        return { rows: results.at(-1)?.rows ?? [] };
      }),
    );
  }

  private send(message: Uint8Array): Promise<BackendMessage[]> {
    return this.db.execProtocolStream(message, { syncToFs: false });
  }
}

/** A parameter as PostgreSQL's text (what PGlite's `query` sends for values without a serializer). */
function wireValue(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "object") return value instanceof Date ? value.toISOString() : JSON.stringify(value);
  return String(value);
}
