import { describe, expect, it } from "vitest";
import { LineSplitter } from "../../../src/engines/http/line-splitter.ts";
import { parseNdjson } from "../../../src/engines/http/ndjson.ts";
import { parseSse, parseSseJson } from "../../../src/engines/http/sse.ts";
import { UpstreamError } from "../../../src/engines/types.ts";

async function* fromParts(parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield part;
}

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

/** Every way to cut the bytes in two, plus one byte at a time. */
function splits(bytes: Buffer): Uint8Array[][] {
  const out: Uint8Array[][] = [];
  for (let at = 0; at <= bytes.length; at++) out.push([bytes.subarray(0, at), bytes.subarray(at)]);
  out.push([...bytes].map((byte) => Uint8Array.of(byte)));
  return out;
}

// "é" is 2 bytes, "€" 3, "🦙" 4: cuts land inside each of them.
const SSE_TEXT =
  ": keep-alive comment\n\n" +
  'data: {"id":"a","text":"Grüezi é € 🦙"}\n\n' +
  'event: message\r\ndata: {"id":"b",\r\ndata: "text":"zwei\\nZeilen"}\r\n\r\n' +
  'data:{"id":"c","text":"no space"}\n\n' +
  "data: [DONE]\n\n" +
  'data: {"id":"after done"}\n\n';

const SSE_EXPECTED = [
  { id: "a", text: "Grüezi é € 🦙" },
  { id: "b", text: "zwei\nZeilen" },
  { id: "c", text: "no space" },
];

const NDJSON_TEXT =
  '{"message":{"content":"Grüezi 🦙"},"done":false}\n' +
  "\n" +
  '{"message":{"content":"€ é"},"done":false}\r\n' +
  '{"done":true,"eval_count":3}';

const NDJSON_EXPECTED = [
  { message: { content: "Grüezi 🦙" }, done: false },
  { message: { content: "€ é" }, done: false },
  { done: true, eval_count: 3 },
];

describe("LineSplitter", () => {
  it("yields the same lines however the bytes are cut, also inside multi-byte UTF-8 characters", () => {
    const bytes = Buffer.from("eins é\nzwei 🦙\r\n\ndrei €", "utf8");
    for (const parts of splits(bytes)) {
      const splitter = new LineSplitter();
      const lines = parts.flatMap((part) => splitter.push(part));
      lines.push(...splitter.end());
      expect(lines).toEqual(["eins é", "zwei 🦙", "", "drei €"]);
    }
  });
});

describe("parseSse / parseSseJson", () => {
  it("parses the same JSON payloads at every split position and one byte at a time, stopping at [DONE]", async () => {
    const bytes = Buffer.from(SSE_TEXT, "utf8");
    for (const parts of splits(bytes)) {
      expect(await collect(parseSseJson(fromParts(parts)))).toEqual(SSE_EXPECTED);
    }
  });

  it("keeps event names, joins multi-line data and dispatches an event left open at the end", async () => {
    const events = await collect(
      parseSse(fromParts([Buffer.from("event: error\ndata: a\ndata: b\n\ndata: last")])),
    );
    expect(events).toEqual([
      { event: "error", data: "a\nb" },
      { event: undefined, data: "last" },
    ]);
  });

  it("fails with a protocol UpstreamError on a payload that is not JSON", async () => {
    const error = await collect(parseSseJson(fromParts([Buffer.from("data: {broken\n\n")]))).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).kind).toBe("protocol");
  });
});

describe("parseNdjson", () => {
  it("parses the same lines at every split position and one byte at a time, with CRLF and blank lines", async () => {
    const bytes = Buffer.from(NDJSON_TEXT, "utf8");
    for (const parts of splits(bytes)) {
      expect(await collect(parseNdjson(fromParts(parts)))).toEqual(NDJSON_EXPECTED);
    }
  });

  it("fails with a protocol UpstreamError on a line that is not JSON", async () => {
    const error = await collect(parseNdjson(fromParts([Buffer.from('{"ok":1}\nnot json\n')]))).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).kind).toBe("protocol");
  });
});
