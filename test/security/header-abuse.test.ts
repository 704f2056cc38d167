import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN } from "../helpers/test-app.ts";
import { type KbStack, startKbStack } from "../knowledge/kb-stack.ts";
import {
  type ErrorSurface,
  expectHealthy,
  expectSaneAnswer,
  firstBody,
  parseJson,
  rawExchange,
  statusesOf,
} from "./hostile-values.ts";

// Header abuse on the key, app and operator APIs. Every case: the one status it must get,
// never a 500, errors in the spec's shape ("Errors / Shapes"), the server well afterwards.

const ROUTES: Record<ErrorSurface, { method: string; path: string; body?: string }> = {
  key: {
    method: "POST",
    path: "/v1/chat/completions",
    body: JSON.stringify({ model: "gemma3.8-27b", messages: [{ role: "user", content: "hi" }] }),
  },
  app: { method: "POST", path: "/api/v1/chat/sessions", body: JSON.stringify({ title: "t" }) },
  admin: { method: "GET", path: "/admin/v1/accounts" },
};
/** The route's own success: 201 for a new conversation, 200 elsewhere. */
const OK = 0;
const ALL: ErrorSurface[] = ["key", "app", "admin"];
const BODIES: ErrorSurface[] = ["key", "app"];

/** The status a case must get on an API (`OK`: the route's success). */
type Expected = number | Partial<Record<ErrorSurface, number>>;
const statusFor = (expected: Expected, surface: ErrorSurface) => {
  const status = typeof expected === "number" ? expected : (expected[surface] ?? OK);
  return status === OK ? (surface === "app" ? 201 : 200) : status;
};

/** A case sent with fetch; `auth` is the right credential of the API (`Bearer ...`). */
interface FetchCase {
  name: string;
  surfaces: ErrorSurface[];
  headers: (auth: string, surface: ErrorSurface) => Record<string, string>;
  body?: (surface: ErrorSurface) => string | Uint8Array;
  expected: Expected;
}

const json = { "content-type": "application/json" };
const withHeader = (name: string, value: string) => (auth: string) => ({
  ...json,
  authorization: auth,
  [name]: value,
});
const authorization = (name: string, value: (auth: string) => string, expected: Expected): FetchCase => ({
  name: `Authorization, ${name}`,
  surfaces: ALL,
  headers: (auth) => ({ ...json, authorization: value(auth) }),
  expected,
});
const contentType = (type: string, expected: Expected): FetchCase => ({
  name: `Content-Type ${JSON.stringify(type)} on a JSON body`,
  surfaces: BODIES,
  headers: (auth) => ({ authorization: auth, "content-type": type }),
  expected,
});
// Read as a form or as nothing (spec "Common causes of 422"); a conversation's fields are all optional.
const AS_FORM = { key: 422, app: 201 };

const FETCH_CASES: FetchCase[] = [
  // The one scheme is Bearer (any case), with one token and spaces around it (spec "Authentication").
  authorization("scheme in lower case", (auth) => auth.replace("Bearer", "bearer"), OK),
  authorization("spaces and a tab around the token", (auth) => auth.replace(" ", " \t  "), OK),
  authorization(
    "Basic scheme",
    (auth) => `Basic ${Buffer.from(`${auth.slice(7)}:`).toString("base64")}`,
    401,
  ),
  authorization("Token scheme", (auth) => auth.replace("Bearer", "Token"), 401),
  authorization("the token alone", (auth) => auth.slice(7), 401),
  authorization("Bearer and nothing", () => "Bearer", 401),
  authorization("two tokens", (auth) => `${auth} ${auth.slice(7)}`, 401),
  authorization("two values joined by fetch (a, b)", (auth) => `${auth}, ${auth}`, 401),
  authorization("a 12 KB token", () => `Bearer sk-${"a".repeat(12_000)}`, 401),
  authorization("Latin-1 letters after the token", (auth) => `${auth}é`, 401),
  authorization("the operator token", () => `Bearer ${ADMIN_TOKEN}`, { key: 401, app: 401 }),
  {
    name: "Authorization, a user's token on the key API, a key on the app API (spec Authentication)",
    surfaces: BODIES,
    headers: (_auth, surface) => ({
      ...json,
      authorization: surface === "key" ? "Bearer zat_x.y" : "Bearer sk-x",
    }),
    expected: 401,
  },
  contentType("APPLICATION/JSON", OK),
  contentType("application/json; charset=utf-16", OK),
  contentType("application/json;;;charset=", OK),
  contentType("application/json, text/plain", 400),
  contentType("", 400),
  contentType("text/plain", AS_FORM),
  contentType("text/html; charset=iso-8859-1", AS_FORM),
  contentType("application/x-www-form-urlencoded", AS_FORM),
  contentType("multipart/form-data", AS_FORM),
  contentType("multipart/form-data; boundary=x", AS_FORM),
  contentType('no/such; x="unterminated', AS_FORM),
  // Bodies are not decompressed: a compressed body is no JSON, so it is read as empty.
  ...[
    { name: "gzip with garbage", encoding: "gzip", body: () => new Uint8Array([0x1f, 0x8b, 1, 2, 3]) },
    { name: "gzip of the JSON", encoding: "gzip", body: (s: ErrorSurface) => gzipSync(ROUTES[s].body ?? "") },
    { name: "br, deflate, identity", encoding: "br, deflate, identity", body: () => new Uint8Array([0, 1]) },
  ].map((variant) => ({
    name: `Content-Encoding ${variant.name}`,
    surfaces: BODIES,
    headers: withHeader("content-encoding", variant.encoding),
    body: (surface: ErrorSurface) => new Uint8Array(variant.body(surface)),
    expected: AS_FORM,
  })),
  // No content negotiation: JSON whatever is asked.
  ...["text/html", "application/xml", "*/*;q=0", `text/plain;q=0.1, ${"x/y, ".repeat(1500)}*/*`].map(
    (accept) => ({
      name: `Accept ${accept.slice(0, 30)}`,
      surfaces: ALL,
      headers: withHeader("accept", accept),
      expected: OK,
    }),
  ),
  // A client's X-Request-Id is only logged; the answer carries the service's own (spec "What the service does").
  ...["evil", "req_00000000000000000000000000000000", "x".repeat(8000), "a, b"].map((id) => ({
    name: `X-Request-Id ${id.slice(0, 40)}`,
    surfaces: ALL,
    headers: withHeader("x-request-id", id),
    expected: OK,
  })),
  {
    name: "X-Request-Id on an error: the body's request_id is the service's own too",
    surfaces: ["key", "admin"],
    headers: () => ({ ...json, authorization: "Bearer nope", "x-request-id": "evil" }),
    expected: 401,
  },
  // Not in the spec: ignored, whatever its size.
  ...["k-1", "k".repeat(8000)].map((value) => ({
    name: `Idempotency-Key of ${value.length} characters`,
    surfaces: BODIES,
    headers: withHeader("idempotency-key", value),
    expected: OK,
  })),
  // An unknown tier is 400 (spec "Key API status codes").
  ...[
    { tier: "slow", expected: OK },
    { tier: "warp", expected: 400 },
    { tier: "slow, fast", expected: 400 },
    { tier: "s".repeat(5000), expected: 400 },
  ].map((variant) => ({
    name: `X-Service-Tier ${variant.tier.slice(0, 20)}`,
    surfaces: ["key"] as ErrorSurface[],
    headers: withHeader("x-service-tier", variant.tier),
    expected: variant.expected,
  })),
  {
    name: "500 small headers (under Node's 16 KB)",
    surfaces: ALL,
    headers: (auth) => ({
      ...json,
      authorization: auth,
      ...Object.fromEntries(Array.from({ length: 500 }, (_, index) => [`x-h${index}`, "1"])),
    }),
    expected: OK,
  },
];

type Line = [string, string | Buffer];

/** A raw case: what fetch refuses to send (duplicate lines, bytes, lies about the body). */
interface RawCase {
  name: string;
  surfaces: ErrorSurface[];
  /** The header lines (Host first unless `noHost`), after which the route's body follows. */
  lines: (auth: string, surface: ErrorSurface) => Line[];
  /** Instead of the route's JSON body and its Content-Type and Content-Length. */
  body?: string;
  noHost?: boolean;
  expected: Expected;
  /** Node's parser refused the request: the connection is closed after the answer. */
  closes?: boolean;
}

function rawBytes(probe: RawCase, surface: ErrorSurface, auth: string): Buffer {
  const route = ROUTES[surface];
  const own = probe.body === undefined && route.body !== undefined;
  const lines: Line[] = [
    ...(probe.noHost ? [] : [["Host", "127.0.0.1"] as Line]),
    ...probe.lines(auth, surface),
    ...(own
      ? ([
          ["Content-Type", "application/json"],
          ["Content-Length", String(route.body?.length)],
        ] as Line[])
      : []),
  ];
  const head = lines.map(([name, value]) =>
    Buffer.concat([Buffer.from(`${name}: `), Buffer.from(value), Buffer.from("\r\n")]),
  );
  const body = probe.body ?? route.body ?? "";
  return Buffer.concat([
    Buffer.from(`${route.method} ${route.path} HTTP/1.1\r\n`),
    ...head,
    Buffer.from(`\r\n${body}`),
  ]);
}

// The codes of the parser's refusals (the spec lists none: these follow its shape).
const PARSER_CODES: Record<number, string> = { 400: "bad_request", 431: "request_header_fields_too_large" };

const sendsJson = (lines: Line[]): Line[] => [["Content-Type", "application/json"], ...lines];
const RAW_CASES: RawCase[] = [
  {
    name: "one header of 20 KB, over Node's 16 KB",
    surfaces: ALL,
    lines: (auth) => [
      ["Authorization", auth],
      ["X-Pad", "p".repeat(20_000)],
    ],
    expected: 431,
    closes: true,
  },
  {
    name: "3,000 headers, 30 KB in all",
    surfaces: ALL,
    lines: (auth) => [
      ["Authorization", auth],
      ...Array.from({ length: 3000 }, (_, i): Line => [`X-H${i}`, "1"]),
    ],
    expected: 431,
    closes: true,
  },
  {
    name: "two Authorization lines, the good one first: Node keeps the first",
    surfaces: ALL,
    lines: (auth) => [
      ["Authorization", auth],
      ["Authorization", "Bearer nope"],
    ],
    expected: OK,
  },
  {
    name: "two Authorization lines, the bad one first",
    surfaces: ALL,
    lines: (auth) => [
      ["Authorization", "Bearer nope"],
      ["Authorization", auth],
    ],
    expected: 401,
  },
  {
    name: "Authorization with UTF-8 bytes (not ASCII)",
    surfaces: ALL,
    lines: (auth) => [["Authorization", Buffer.from(`${auth}ü€`)]],
    expected: 401,
  },
  {
    name: "Authorization with a control byte",
    surfaces: ALL,
    lines: (auth) => [["Authorization", `${auth}\u0001`]],
    expected: 400,
    closes: true,
  },
  {
    name: "X-Request-Id twice, with bytes that are not UTF-8",
    surfaces: ALL,
    lines: (auth) => [
      ["Authorization", auth],
      ["X-Request-Id", Buffer.from([0xff, 0xfe, 0x80])],
      ["X-Request-Id", "evil"],
    ],
    expected: OK,
  },
  {
    name: "Transfer-Encoding chunked and a Content-Length (request smuggling)",
    surfaces: BODIES,
    lines: (auth) =>
      sendsJson([
        ["Authorization", auth],
        ["Content-Length", "4"],
        ["Transfer-Encoding", "chunked"],
      ]),
    body: "2\r\n{}\r\n0\r\n\r\n",
    expected: 400,
    closes: true,
  },
  {
    name: "Transfer-Encoding chunked with a chunk size that is no number",
    surfaces: BODIES,
    lines: (auth) =>
      sendsJson([
        ["Authorization", auth],
        ["Transfer-Encoding", "chunked"],
      ]),
    body: "zz\r\n{}\r\n0\r\n\r\n",
    expected: 400,
    closes: true,
  },
  {
    name: "Transfer-Encoding gzip, not chunked",
    surfaces: BODIES,
    lines: (auth) =>
      sendsJson([
        ["Authorization", auth],
        ["Transfer-Encoding", "gzip"],
      ]),
    body: "{}",
    expected: 400,
    closes: true,
  },
  {
    name: "two different Content-Lengths",
    surfaces: BODIES,
    lines: (auth) =>
      sendsJson([
        ["Authorization", auth],
        ["Content-Length", "2"],
        ["Content-Length", "3"],
      ]),
    body: "{}",
    expected: 400,
    closes: true,
  },
  {
    name: "Content-Length -1",
    surfaces: BODIES,
    lines: (auth) =>
      sendsJson([
        ["Authorization", auth],
        ["Content-Length", "-1"],
      ]),
    body: "{}",
    expected: 400,
    closes: true,
  },
  {
    name: "Content-Length of a petabyte on a JSON body: an HTML page (spec Errors / Shapes 5)",
    surfaces: BODIES,
    lines: (auth) =>
      sendsJson([
        ["Authorization", auth],
        ["Content-Length", String(10 ** 15)],
      ]),
    body: "{}",
    expected: 413,
  },
  {
    name: "no Host header in HTTP/1.1: missing_host from the app (Node's own 400 had no body)",
    surfaces: ["key"],
    lines: (auth) => [["Authorization", auth]],
    noHost: true,
    expected: 400,
  },
  {
    name: "a space before the colon of a header name",
    surfaces: ["key"],
    lines: (auth) => [
      ["Authorization", auth],
      ["X-Odd ", "1"],
    ],
    expected: 400,
    closes: true,
  },
  {
    name: "a folded header line (obs-fold)",
    surfaces: ["key"],
    lines: (auth) => [
      ["Authorization", auth],
      ["X-Folded", "a\r\n  b"],
    ],
    expected: 400,
    closes: true,
  },
];

describe("Header abuse on the key, app and operator APIs (spec Errors / Shapes, Authentication)", () => {
  let s: KbStack;
  const auth: Record<ErrorSurface, string> = { key: "", app: "", admin: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    s = await startKbStack({
      config: {
        installation: { zones: [{ id: "ch-ti" }], trusted_networks: ["127.0.0.0/8"] },
        tiers: { slow: { multiplier: 1, requests_per_minute: 1_000_000 } },
        rate_limits: { endpoint_limits: { chat_completions: 1_000_000 } },
      },
    });
    const user = await s.user();
    auth.app = `Bearer ${user.token}`;
    auth.key = `Bearer ${(await s.keyOf(user.accountId)).key}`;
  }, 60_000);
  afterAll(() => s?.close());

  const cases = <T extends { name: string; surfaces: ErrorSurface[]; expected: Expected }>(list: T[]) =>
    list.flatMap((one) =>
      one.surfaces.map((surface) => ({
        ...one,
        surface,
        status: statusFor(one.expected, surface),
        title: `${surface} API, ${one.name}`,
      })),
    );

  it.each(cases(FETCH_CASES))("$title: $status", async (probe) => {
    const route = ROUTES[probe.surface];
    const headers = probe.headers(auth[probe.surface], probe.surface);
    const body = probe.body ? probe.body(probe.surface) : route.body;
    const response = await s.t.fetch(route.path, {
      method: route.method,
      headers,
      ...(body === undefined || route.method === "GET" ? {} : { body }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    expect(response.status, text.slice(0, 200)).toBe(probe.status);
    expectSaneAnswer(probe.surface, response.status, text, response.headers.get("content-type"));
    expect(response.headers.get("content-type")).toMatch(/^application\/json/);
    // The service's own id on every answer, and the same in an error's body.
    const id = response.headers.get("x-request-id");
    expect(id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(id).not.toBe(headers["x-request-id"]);
    const requestId = (parseJson(text) as { error?: { request_id?: unknown } } | undefined)?.error
      ?.request_id;
    if (requestId !== undefined) expect(requestId).toBe(id);
  });

  it.each(cases(RAW_CASES))("$title: $status", async (probe) => {
    const started = Date.now();
    const bytes = rawBytes(probe, probe.surface, auth[probe.surface]);
    const answer = await rawExchange(s.t.url, bytes, { firstOnly: !probe.closes, hangUpMs: 5_000 });
    const first = firstBody(answer);
    expect(statusesOf(answer), answer.slice(0, 300)).toEqual([probe.status]);
    expectSaneAnswer(probe.surface, first.status, first.body, first.type);
    // Refused by the parser: told so, and the connection closed at once (not left to time out).
    if (probe.closes) {
      expect(answer).toMatch(/\r\nConnection: close\r\n/i);
      expect(Date.now() - started).toBeLessThan(4_000);
      const code = (parseJson(first.body) as { error?: { code?: unknown } } | undefined)?.error?.code;
      if (probe.status in PARSER_CODES) expect(code).toBe(PARSER_CODES[probe.status]);
    }
    await expectHealthy(s.t);
  });
});
