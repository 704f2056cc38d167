import { UpstreamError } from "../types.ts";
import { LineSplitter, MAX_LINE_CHARACTERS } from "./line-splitter.ts";

/** One server-sent event: its `event:` name (if any) and its `data:` lines joined by "\n". */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * Parses a server-sent-event stream incrementally. Comments (":" lines) and fields other than
 * `data` and `event` are skipped; an event is dispatched at its blank line, and one left open
 * when the stream ends is dispatched too (some servers omit the last blank line). An event whose
 * data outgrows MAX_LINE_CHARACTERS (data lines that never meet a blank line) is a `protocol` failure.
 */
export async function* parseSse(source: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const splitter = new LineSplitter();
  let data: string[] = [];
  let size = 0;
  let event: string | undefined;
  const take = (line: string): SseEvent | undefined => {
    if (line.length === 0) {
      if (data.length === 0) {
        event = undefined;
        return undefined;
      }
      const dispatched = { event, data: data.join("\n") };
      data = [];
      size = 0;
      event = undefined;
      return dispatched;
    }
    if (line.charCodeAt(0) === 58 /* ":" */) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32 /* " " */) value = value.slice(1);
    if (field === "data") {
      size += value.length + 1;
      if (size > MAX_LINE_CHARACTERS) {
        throw new UpstreamError(
          "protocol",
          `the upstream sent an event longer than ${MAX_LINE_CHARACTERS} characters`,
        );
      }
      data.push(value);
    } else if (field === "event") event = value;
    return undefined;
  };
  for await (const chunk of source) {
    for (const line of splitter.push(chunk)) {
      const dispatched = take(line);
      if (dispatched !== undefined) yield dispatched;
    }
  }
  for (const line of [...splitter.end(), ""]) {
    const dispatched = take(line);
    if (dispatched !== undefined) yield dispatched;
  }
}

/**
 * The JSON payloads of an OpenAI-style SSE stream, up to its `data: [DONE]` terminator. Anything
 * after it is ignored, but read to the end: servers end the answer right after [DONE], and a body
 * read to its end leaves the connection in the keep-alive pool (one cut short is closed).
 * A payload that is not JSON is a `protocol` failure.
 */
export async function* parseSseJson(source: AsyncIterable<Uint8Array>): AsyncGenerator<unknown> {
  let done = false;
  for await (const { data } of parseSse(source)) {
    if (done) continue;
    if (data === "[DONE]") done = true;
    else yield parseJsonPayload(data, "an event");
  }
}

/** JSON.parse with a `protocol` failure instead of a SyntaxError. */
export function parseJsonPayload(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamError("protocol", `the upstream sent ${what} that is not JSON`);
  }
}
