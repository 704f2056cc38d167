import { open } from "node:fs/promises";
import { judgeContent, judgeZipEntries, looksLikePdf } from "./document-format.ts";
import { DocumentUnreadable } from "./document-unreadable.ts";
import type { DocumentFormat } from "./extracted-document.ts";
import { looksLikeZip, readZipDirectoryOfFile } from "./zip-directory.ts";

/** Bytes of the beginning of a text file judged at upload (looksLikeMarkdown reads as many). */
const SAMPLE_BYTES = 64 * 1024;

/**
 * The format of an uploaded file on disk, by the rule of judgeContent, read from its beginning and
 * end only (a ZIP's directory too): an upload is judged without holding it in memory or decoding
 * all of it on the request path. The rest of a text file is checked when it is read, which fails
 * the document with the same reason if it is not text after all.
 */
export async function judgeFile(path: string, size: number, filename: string): Promise<DocumentFormat> {
  if (size === 0) throw new DocumentUnreadable("empty", "The file is empty.");
  const file = await open(path, "r");
  try {
    const head = Buffer.alloc(Math.min(size, SAMPLE_BYTES));
    await file.read(head, 0, head.length, 0);
    const tail = Buffer.alloc(Math.min(size, 1024));
    await file.read(tail, 0, tail.length, size - tail.length);
    if (looksLikePdf(head, tail)) return "pdf";
    if (looksLikeZip(head)) return judgeZipEntries(await readZipDirectoryOfFile(file, size));
    return judgeContent(size > head.length ? wholeCharacters(head) : head, filename).format;
  } finally {
    await file.close();
  }
}

/** The sample without a character cut at its end (UTF-8 or UTF-16), which would not decode. */
function wholeCharacters(sample: Buffer): Buffer {
  const utf16 = (sample[0] === 0xff && sample[1] === 0xfe) || (sample[0] === 0xfe && sample[1] === 0xff);
  if (utf16) return sample.subarray(0, sample.length - (sample.length % 2) - 2);
  let end = sample.length;
  // Drop trailing continuation bytes and the lead byte they belong to (at most one character).
  while (end > sample.length - 3 && end > 0 && ((sample[end - 1] ?? 0) & 0xc0) === 0x80) end -= 1;
  if (end > 0 && (sample[end - 1] ?? 0) >= 0xc0) end -= 1;
  return sample.subarray(0, end);
}
