import { LineSplitter } from "./line-splitter.ts";
import { parseJsonPayload } from "./sse.ts";

/**
 * Parses a newline-delimited JSON stream (Ollama) incrementally: one JSON value per line, blank
 * lines skipped. A line that is not JSON is a `protocol` failure.
 */
export async function* parseNdjson(source: AsyncIterable<Uint8Array>): AsyncGenerator<unknown> {
  const splitter = new LineSplitter();
  for await (const chunk of source) {
    for (const line of splitter.push(chunk)) {
      if (line.trim().length > 0) yield parseJsonPayload(line, "a line");
    }
  }
  for (const line of splitter.end()) {
    if (line.trim().length > 0) yield parseJsonPayload(line, "a line");
  }
}
