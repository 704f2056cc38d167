/**
 * Reads a `text/event-stream` body event by event and hands each `data:` JSON to `onEvent`. The
 * answer stream is the answer to a POST, which `EventSource` cannot send, hence this reader.
 * Ends when the server ends the stream; throws an AbortError when `signal` stops it.
 */
export async function readEventStream<T>(response: Response, onEvent: (event: T) => void): Promise<void> {
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end = boundary(buffer);
    while (end) {
      const block = buffer.slice(0, end.at);
      buffer = buffer.slice(end.at + end.length);
      const data = dataOf(block);
      if (data !== undefined) onEvent(JSON.parse(data) as T);
      end = boundary(buffer);
    }
  }
}

function boundary(buffer: string): { at: number; length: number } | undefined {
  const match = /\r?\n\r?\n/.exec(buffer);
  return match ? { at: match.index, length: match[0].length } : undefined;
}

function dataOf(block: string): string | undefined {
  const lines = block
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
  return lines.length > 0 ? lines.join("\n") : undefined;
}
