import { createReadStream } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { createInterface } from "node:readline";
import type { Passage } from "../documents/split-passages.ts";

/**
 * Passages travel from the reading process to the service through a file, one JSON object a line,
 * so that neither side holds a whole document's passages in memory: the reader writes them as it
 * goes, the ingestion reads them back a batch at a time.
 */
export async function writePassages(file: FileHandle, passages: Iterable<Passage>): Promise<number> {
  let count = 0;
  let pending: string[] = [];
  for (const passage of passages) {
    pending.push(`${JSON.stringify(passage)}\n`);
    count += 1;
    if (pending.length === 256) {
      await file.write(pending.join(""));
      pending = [];
    }
  }
  if (pending.length > 0) await file.write(pending.join(""));
  return count;
}

/** The passages of a passage file in batches of `size`, in order. */
export async function* readPassageBatches(path: string, size: number): AsyncGenerator<Passage[]> {
  const lines = createInterface({ input: createReadStream(path), crlfDelay: Infinity });
  let batch: Passage[] = [];
  try {
    for await (const line of lines) {
      if (!line) continue;
      batch.push(JSON.parse(line) as Passage);
      if (batch.length === size) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  } finally {
    lines.close();
  }
}
