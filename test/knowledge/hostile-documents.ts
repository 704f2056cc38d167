import { constants, crc32, deflateRawSync } from "node:zlib";

/**
 * A corpus of hostile documents, made here rather than committed: files that once crashed or froze
 * the service when read in its own process (a Word part that unpacks to 62 MB of tiny paragraphs,
 * PDF operators nested tens of thousands deep, streams and parts that inflate to a gigabyte), and
 * their relatives. Each is small to send and costly to read.
 */
export interface HostileDocument {
  name: string;
  bytes: Buffer;
  /** What reading it must end in: `ready`, `failed`, or either (what matters is that it ends). */
  ends: "ready" | "failed" | "either";
  /** A word the failure reason must hold, when it fails. */
  reason?: RegExp;
}

const MB = 1024 * 1024;

/**
 * The corpus. `textMb` sizes the two long text files (12 and 15 MB by default): reading them is
 * quick, but storing 15,000 passages with their vectors takes minutes on the embedded database.
 */
export function hostileDocuments(options: { textMb?: number } = {}): HostileDocument[] {
  const text = (mb: number) => (options.textMb ?? mb) * MB;
  return [
    {
      // 186 KB that unpacks to 62 MB of XML, under the 64 MB cap on parts: the Word reader needs gigabytes.
      name: "tiny-paragraphs.docx",
      bytes: docx(repeat("<w:p><w:r><w:t>a</w:t></w:r></w:p>", 62 * MB)),
      ends: "failed",
      reason: /memory|longer than/,
    },
    {
      name: "deep-xml.docx",
      bytes: docx(
        `${"<w:sdt><w:sdtContent>".repeat(200_000)}<w:p><w:r><w:t>deep</w:t></w:r></w:p>${"</w:sdtContent></w:sdt>".repeat(200_000)}`,
      ),
      ends: "either",
    },
    {
      name: "zip-bomb.docx",
      bytes: docx(repeated(" ", 1024 * MB), { wrap: false }),
      ends: "failed",
      reason: /unpacks to more than/,
    },
    {
      name: "nested-q-20k.pdf",
      bytes: pdf(`${"q ".repeat(20_000)}BT /F1 12 Tf 72 720 Td (A lighthouse at dusk) Tj ET`),
      ends: "either",
    },
    {
      name: "nested-q-50k.pdf",
      bytes: pdf(`${"q ".repeat(50_000)}BT /F1 12 Tf 72 720 Td (A glacier at dawn) Tj ET`),
      ends: "either",
    },
    {
      // 1 MB that inflates to 1 GB: refused by what it unpacks to, before any reading.
      name: "stream-bomb.pdf",
      bytes: pdf(repeated(" ", 1024 * MB), { filter: "flate" }),
      ends: "failed",
      reason: /unpacks to more than/,
    },
    {
      // The same bomb behind a second filter, which the size check does not open: the memory cap stops it.
      name: "hex-stream-bomb.pdf",
      bytes: pdf(repeated(" ", 1024 * MB), { filter: "hex-flate" }),
      ends: "failed",
      reason: /memory|longer than|damaged/,
    },
    {
      name: "one-line.txt",
      bytes: Buffer.from(repeat("lighthouse ", text(12))),
      ends: "ready",
    },
    {
      name: "fifteen-mb.txt",
      bytes: Buffer.from(repeat("The keeper climbs the stairs at dusk.\n\n", text(15))),
      ends: "ready",
    },
  ];
}

/** `unit` repeated up to about `bytes` bytes. */
function repeat(unit: string, bytes: number): string {
  return unit.repeat(Math.max(1, Math.floor(bytes / unit.length)));
}

/** Deflated content: raw deflate blocks, the size they unpack to and its checksums. */
interface Packed {
  raw: Buffer;
  size: number;
  crc: number;
  adler: number;
}

/** `text` deflated. */
function packed(text: string): Packed {
  const data = Buffer.from(text, "latin1");
  return {
    raw: deflateRawSync(data, { level: 9 }),
    size: data.length,
    crc: crc32(data),
    adler: adler32(data),
  };
}

const CHUNK = 1024 * 1024;

/**
 * `unit` (one byte) repeated `bytes` times, deflated without ever being in memory: one megabyte is
 * deflated once (ending on a sync flush, so pieces can follow each other) and its blocks repeated.
 */
function repeated(unit: string, bytes: number): Packed {
  const chunks = Math.max(1, Math.floor(bytes / CHUNK));
  const chunk = Buffer.alloc(CHUNK, unit, "latin1");
  const piece = deflateRawSync(chunk, { level: 9, finishFlush: constants.Z_SYNC_FLUSH });
  let crc = 0;
  for (let i = 0; i < chunks; i++) crc = crc32(chunk, crc);
  const size = chunks * CHUNK;
  // Adler-32 of n equal bytes v: a = 1 + n v, b = n + v n (n + 1) / 2, both modulo 65521.
  const n = BigInt(size);
  const v = BigInt(chunk[0] ?? 0);
  const a = (1n + n * v) % 65521n;
  const b = (n + (v * n * (n + 1n)) / 2n) % 65521n;
  const end = deflateRawSync(Buffer.alloc(0));
  return {
    raw: Buffer.concat([...Array.from({ length: chunks }, () => piece), end]),
    size,
    crc,
    adler: Number((b << 16n) | a),
  };
}

function adler32(data: Buffer): number {
  let a = 1;
  let b = 0;
  for (const byte of data) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** zlib's wrapping of raw deflate (what a PDF's FlateDecode reads). */
function zlibOf(content: Packed): Buffer {
  const check = Buffer.alloc(4);
  check.writeUInt32BE(content.adler >>> 0);
  return Buffer.concat([Buffer.from([0x78, 0xda]), content.raw, check]);
}

/** A Word document whose body is `body` (Word XML), or whose whole main part is `body` when packed. */
function docx(body: string | Packed, options: { wrap?: boolean } = {}): Buffer {
  const document =
    typeof body !== "string" || options.wrap === false
      ? body
      : `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${body}</w:body></w:document>`;
  return zip([
    [
      "[Content_Types].xml",
      '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    ],
    [
      "_rels/.rels",
      '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>',
    ],
    ["word/document.xml", document],
  ]);
}

/** A ZIP archive of deflated entries. */
function zip(entries: Array<[string, string | Packed]>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of entries) {
    const entry = typeof content === "string" ? packed(content) : content;
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(entry.crc >>> 0, 14);
    local.writeUInt32LE(entry.raw.length, 18);
    local.writeUInt32LE(Math.min(entry.size, 0xffffffff), 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(entry.crc >>> 0, 16);
    central.writeUInt32LE(entry.raw.length, 20);
    central.writeUInt32LE(Math.min(entry.size, 0xffffffff), 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, entry.raw);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + entry.raw.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** A one-page PDF whose page content is `content`, plain or behind filters, with a cross-reference table. */
function pdf(content: string | Packed, options: { filter?: "flate" | "hex-flate" } = {}): Buffer {
  let stream: Buffer;
  let filter = "";
  const deflated = () => zlibOf(typeof content === "string" ? packed(content) : content);
  if (options.filter === "flate") {
    stream = deflated();
    filter = "/Filter /FlateDecode ";
  } else if (options.filter === "hex-flate") {
    stream = Buffer.from(`${deflated().toString("hex")}>`, "latin1");
    filter = "/Filter [/ASCIIHexDecode /FlateDecode] ";
  } else {
    if (typeof content !== "string") throw new Error("a packed content needs a filter");
    stream = Buffer.from(content, "latin1");
  }
  const objects: Buffer[] = [
    Buffer.from("<< /Type /Catalog /Pages 2 0 R >>"),
    Buffer.from("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
    Buffer.from(
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    ),
    Buffer.concat([
      Buffer.from(`<< ${filter}/Length ${stream.length} >>\nstream\n`),
      stream,
      Buffer.from("\nendstream"),
    ]),
    Buffer.from("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"),
  ];
  const parts: Buffer[] = [Buffer.from("%PDF-1.4\n")];
  const offsets: number[] = [];
  let at = parts[0]?.length ?? 0;
  objects.forEach((body, i) => {
    const object = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), body, Buffer.from("\nendobj\n")]);
    offsets.push(at);
    parts.push(object);
    at += object.length;
  });
  const xref = [
    `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`,
    ...offsets.map((offset) => `${String(offset).padStart(10, "0")} 00000 n \n`),
    `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${at}\n%%EOF\n`,
  ].join("");
  parts.push(Buffer.from(xref));
  return Buffer.concat(parts);
}
