/**
 * What a hostile client sends, as fast-check arbitraries shared by the fuzz tests
 * (app API, key API, operator API, multipart forms, headers), the checks every answer must pass,
 * and raw exchanges on a socket for what fetch refuses to send.
 */
import { connect } from "node:net";
import fc from "fast-check";
import { expect } from "vitest";
import type { TestApp } from "../helpers/test-app.ts";

/** Fixed seed: a failure is reproduced by running the test again. */
export const FUZZ_SEED = 1_511_240;

/** Cases per endpoint: `FUZZ_RUNS` (e.g. FUZZ_RUNS=300 for a longer search), else the file's default. */
export function fuzzRuns(fallback: number): number {
  const runs = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(runs) && runs > 0 ? runs : fallback;
}

/** Strings that mean something somewhere: empty, NUL, a lone surrogate, key and token look-alikes, names. */
export const ODD_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  `sk-${"a".repeat(40)}`,
  "zat_x.y",
  "slow",
  "gemma3.8-27b",
  "it",
] as const;

/** Values a hostile client puts in a field: wrong types, huge numbers, long or odd strings, nesting. */
export const hostileValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -0, 0.1, 2 ** 53),
  fc.string({ unit: "binary", maxLength: 50 }),
  fc.string({ minLength: 9000, maxLength: 12000 }),
  fc.constantFrom(...ODD_STRINGS),
);

/** A valid body with one field made hostile or one more field added: it gets past the first checks. */
export function nearlyValid(valid: Record<string, unknown>, fields: readonly string[]) {
  return fc
    .tuple(fc.constantFrom(...Object.keys(valid), ...fields), hostileValue)
    .map(([field, value]) => JSON.stringify({ ...valid, [field]: value }));
}

/** Every path into a JSON value (object keys and array indexes), the value itself excluded. */
function pathsOf(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (Array.isArray(value)) {
    return value.flatMap((item, index) => [[...prefix, index], ...pathsOf(item, [...prefix, index])]);
  }
  if (typeof value === "object" && value !== null) {
    return Object.entries(value).flatMap(([key, item]) => [
      [...prefix, key],
      ...pathsOf(item, [...prefix, key]),
    ]);
  }
  return [];
}

function withValueAt(body: Record<string, unknown>, path: Array<string | number>, value: unknown) {
  const copy = structuredClone(body);
  let node: Record<string | number, unknown> = copy;
  for (const step of path.slice(0, -1)) node = node[step] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (last !== undefined) node[last] = value;
  return copy;
}

/**
 * A valid body with one value made hostile at any depth (`messages[0].content`, `documents[1]`...),
 * or one field of `fields` added at the top: the deepest code a valid request reaches gets it.
 */
export function nearlyValidDeep(valid: Record<string, unknown>, fields: readonly string[]) {
  const paths = [...pathsOf(valid), ...fields.map((field) => [field])];
  return fc
    .tuple(fc.constantFrom(...paths), hostileValue)
    .map(([path, value]) => JSON.stringify(withValueAt(valid, path, value)));
}

/** A raw body: JSON objects with the endpoints' field names, any JSON, invalid JSON, deep nesting, bytes. */
export function hostileBody(fields: readonly string[]) {
  return fc.oneof(
    fc
      .dictionary(fc.constantFrom(...fields), hostileValue, { maxKeys: 6 })
      .map((body) => JSON.stringify(body)),
    fc.jsonValue().map((value) => JSON.stringify(value)),
    fc.string({ maxLength: 200 }),
    fc.integer({ min: 1, max: 20_000 }).map((depth) => `${"[".repeat(depth)}${"]".repeat(depth)}`),
    fc.integer({ min: 1, max: 5_000 }).map((depth) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`),
    fc.constantFrom(
      '{"content": 1e400, "model": "x"}',
      '{"__proto__": {"admin": true}}',
      '{"a":1,"a":2}',
      '{"constructor": {"prototype": {"admin": true}}}',
    ),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  );
}

/** A path segment or query value a hostile client puts in an id: odd strings, encoded bytes, traversal. */
export const hostileSegment = fc.oneof(
  fc.string({ maxLength: 40 }).map((text) => encodeURIComponent(text)),
  fc.string({ unit: "binary", maxLength: 20 }).map((text) => encodeURIComponent(text)),
  fc.constantFrom(
    "%00",
    "%ff%fe",
    "%c0%af",
    "%ed%a0%80",
    "%",
    "%zz",
    "..%2f..%2fetc%2fpasswd",
    "00000000-0000-0000-0000-000000000000",
    "-1",
    "1e308",
    "NaN",
    "null",
    "__proto__",
    "constructor",
    "a".repeat(5000),
    encodeURIComponent("'; DROP TABLE accounts; --"),
  ),
);

/** A query string of hostile names and values (repeated names, `[]`, bytes that are not UTF-8). */
export function hostileQuery(names: readonly string[]) {
  const name = names.length > 0 ? fc.oneof(fc.constantFrom(...names), hostileSegment) : hostileSegment;
  return fc
    .array(fc.tuple(name, hostileSegment), { maxLength: 5 })
    .map((pairs) => pairs.map(([name, value]) => `${name}=${value}`).join("&"));
}

/** One request of a fuzz case: a path with its query, and a body with its content type. */
export interface FuzzCase {
  path: string;
  body?: string | Buffer;
  contentType?: string;
}

/** JSON mostly; also the content types a client gets wrong (read as a form, or as nothing). */
export const jsonContentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant("application/json") },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "application/json; charset=utf-16",
      "text/plain",
      "application/x-www-form-urlencoded",
      "application/octet-stream",
    ),
  },
);

/** A JSON endpoint's cases: hostile bodies and nearly valid ones (one value made hostile at any depth). */
export function jsonCases(
  path: string,
  valid: Record<string, unknown>,
  fields: readonly string[],
): fc.Arbitrary<FuzzCase> {
  return fc
    .tuple(fc.oneof(hostileBody(fields), nearlyValidDeep(valid, fields)), jsonContentType)
    .map(([body, contentType]) => ({ path, body, contentType }));
}

/** A path endpoint's cases: hostile ids in the path (`{id}`) and hostile queries. */
export function pathCases(template: string, queryNames: readonly string[]): fc.Arbitrary<FuzzCase> {
  return fc
    .tuple(hostileSegment, hostileQuery(queryNames))
    .map(([segment, query]) => ({ path: `${template.replace("{id}", segment)}${query ? `?${query}` : ""}` }));
}

/** A body read as JSON, or undefined. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The key API's and the operator API's error (spec "Errors / Shapes" 1 and 2; docs/admin-api.md). */
export function isStandardError(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const error = (body as { error?: Record<string, unknown> }).error;
  if (typeof error !== "object" || error === null) return false;
  const nullableString = (value: unknown) => value === null || typeof value === "string";
  return (
    typeof error.message === "string" &&
    typeof error.type === "string" &&
    nullableString(error.code) &&
    nullableString(error.param)
  );
}

/** The app API's error (spec "Errors / Shapes" 6): `{error: {code, message}}`, or `{message}` for a 404. */
export function isAppError(body: unknown): boolean {
  if (typeof body !== "object" || body === null) return false;
  const error = (body as { error?: { code?: unknown; message?: unknown } }).error;
  if (error) return typeof error.code === "string" && typeof error.message === "string";
  return typeof (body as { message?: unknown }).message === "string";
}

/** The endpoint limit's 429 (spec "Errors / Shapes" 3). */
export function isTooManyAttempts(body: unknown): boolean {
  return (body as { message?: unknown } | undefined)?.message === "Too Many Attempts.";
}

/** Which API's error shape an answer must have. */
export type ErrorSurface = "key" | "app" | "admin";

/**
 * The checks of every fuzz case: no 500 (nor anything outside HTTP's range), and an error in the
 * shape of its API: the standard object, `{message}` for an endpoint limit's 429, an HTML page for
 * 413 (spec "Errors / Shapes" 5); app API errors in the app's shape.
 */
export function expectSaneAnswer(
  surface: ErrorSurface,
  status: number,
  text: string,
  contentType: string | null,
): void {
  const what = `${status} ${text.slice(0, 300)}`;
  expect(status, what).not.toBe(500);
  expect(status, what).toBeGreaterThanOrEqual(100);
  expect(status, what).toBeLessThan(600);
  if (status < 400) return;
  if (status === 413) {
    expect(contentType ?? "", what).toMatch(/^text\/html/);
    return;
  }
  const body = parseJson(text);
  if (surface === "app") {
    expect(isAppError(body), what).toBe(true);
    return;
  }
  if (status === 429 && isTooManyAttempts(body)) return;
  expect(isStandardError(body), what).toBe(true);
}

/** The code an error body names (`error.code`, else `error.type`), for the figures. */
function codeOf(text: string): string | undefined {
  const body = parseJson(text) as { error?: { code?: unknown; type?: unknown } } | undefined;
  const code = body?.error?.code ?? body?.error?.type;
  return typeof code === "string" ? code : undefined;
}

/** Counts the statuses (and error codes) seen, per endpoint, for docs/reliability.md (`FUZZ_REPORT=1` prints them). */
export class StatusTally {
  private readonly seen = new Map<string, Map<string, number>>();

  add(endpoint: string, status: number, text = ""): void {
    const code = status >= 400 ? codeOf(text) : undefined;
    const key = code ? `${status} ${code}` : `${status}`;
    const statuses = this.seen.get(endpoint) ?? new Map<string, number>();
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
    this.seen.set(endpoint, statuses);
  }

  /** One line per endpoint: cases, then each status (with its code) and how often. */
  lines(): string[] {
    return [...this.seen].map(([endpoint, statuses]) => {
      const cases = [...statuses.values()].reduce((sum, count) => sum + count, 0);
      const list = [...statuses]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([status, count]) => `${status} ×${count}`)
        .join(", ");
      return `${endpoint}: ${cases} cases; ${list}`;
    });
  }

  print(title: string): void {
    if (process.env.FUZZ_REPORT) console.info([title, ...this.lines()].join("\n"));
  }
}

/** The app is alive after the cases: `/healthz` answers 200 within a few seconds. */
export async function expectHealthy(t: TestApp): Promise<void> {
  const response = await t.fetch("/healthz", { signal: AbortSignal.timeout(5_000) });
  expect(response.status).toBe(200);
  await response.text();
}

/**
 * Sends raw bytes on a connection of its own; the answers' text once the server closes, once one
 * whole answer came (`firstOnly`), or what came before `hangUpMs`.
 */
export function rawExchange(
  url: string,
  bytes: Buffer,
  options: { hangUpMs?: number; firstOnly?: boolean } = {},
): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let answer = "";
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    // Bounded: a server that keeps waiting for bytes never sent is cut off here, as a client gives up.
    const timer = setTimeout(done, options.hangUpMs ?? 5_000);
    socket.on("data", (chunk) => {
      answer += chunk.toString("latin1");
      if (options.firstOnly && wholeAnswer(answer)) done();
    });
    socket.on("error", done);
    socket.on("close", done);
    socket.write(bytes);
  });
}

/** Whether a raw exchange holds one whole answer (headers and a body of its Content-Length). */
export function wholeAnswer(answer: string): boolean {
  const end = answer.indexOf("\r\n\r\n");
  if (end < 0) return false;
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(answer.slice(0, end))?.[1] ?? 0);
  return answer.length >= end + 4 + length;
}

/** The statuses of the answers in a raw exchange, in order. */
export function statusesOf(answer: string): number[] {
  return [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
}

/** The body of the first answer of a raw exchange (by its Content-Length). */
export function firstBody(answer: string): { status: number; type: string | null; body: string } {
  const [head = "", rest = ""] = answer.split("\r\n\r\n", 2);
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? rest.length);
  const type = /\r\ncontent-type: ([^\r]+)/i.exec(head)?.[1] ?? null;
  return { status: statusesOf(head)[0] ?? 0, type, body: rest.slice(0, length) };
}
