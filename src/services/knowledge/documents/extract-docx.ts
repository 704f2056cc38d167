import { loadOnFirstUse } from "../../../load-on-first-use.ts";
import type { DocumentLimits } from "./document-limits.ts";
import { DocumentUnreadable } from "./document-unreadable.ts";
import { addDocxHtml } from "./docx-html.ts";
import type { ExtractedDocument } from "./extracted-document.ts";
import { SectionBuilder } from "./section-builder.ts";
import { readZipDirectory, unpackedSize } from "./zip-directory.ts";

// Loaded by the first Word document read (mammoth brings JSZip and an XML DOM with it).
const loadMammoth = loadOnFirstUse(async () => (await import("mammoth")).default);

/** Word's own title style is a heading too; the rest of mammoth's default style map stays. */
const STYLE_MAP = ["p[style-name='Title'] => h1:fresh"];

/**
 * The text of a Word (DOCX) document, its Heading 1 to Heading 6 paragraphs starting sections.
 * The archive is measured first by really unpacking it (see checkUnpacked), so a zip bomb is
 * refused before mammoth, which reads whole parts into memory, ever sees it.
 */
export async function extractDocx(
  bytes: Buffer,
  limits: Pick<DocumentLimits, "maxTextChars" | "maxDocxUnpackedBytes" | "maxDocxXmlBytes">,
): Promise<ExtractedDocument> {
  await checkUnpacked(bytes, limits);
  const mammoth = await loadMammoth();
  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { buffer: bytes },
      {
        styleMap: STYLE_MAP,
        // Pictures are not text: they are never read (mammoth would inline them as data: URLs),
        // and nothing outside the file (linked pictures) is ever opened.
        convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: "" })),
        externalFileAccess: false,
        ignoreEmptyParagraphs: true,
      },
    );
    html = result.value;
  } catch (error) {
    throw corrupt(error);
  }
  const sections = new SectionBuilder(limits.maxTextChars);
  addDocxHtml(html, sections);
  const found = sections.finish();
  if (found.length === 0) {
    throw new DocumentUnreadable("no_text", "The Word document holds no text (it may hold only pictures).");
  }
  return { format: "docx", sections: found };
}

/**
 * Unpacks every part of the archive (without keeping it) to learn its real size: the sizes a ZIP
 * declares can lie. The XML parts, which mammoth parses into memory, have a lower budget than the
 * whole (pictures are never parsed).
 */
async function checkUnpacked(
  bytes: Buffer,
  limits: Pick<DocumentLimits, "maxDocxUnpackedBytes" | "maxDocxXmlBytes">,
): Promise<void> {
  const entries = readZipDirectory(bytes);
  if (!entries) throw corrupt();
  let total = 0;
  let xml = 0;
  for (const entry of entries) {
    if (entry.name.endsWith("/")) continue;
    if (entry.flags & 1) {
      throw new DocumentUnreadable(
        "encrypted",
        "The Word document is protected by a password. Save a copy without the password and upload that.",
      );
    }
    const isXml = /\.(?:xml|rels)$/i.test(entry.name);
    const totalLeft = limits.maxDocxUnpackedBytes - total;
    const xmlLeft = isXml ? limits.maxDocxXmlBytes - xml : Infinity;
    let size: number | undefined;
    try {
      size = await unpackedSize(bytes, entry, Math.min(totalLeft, xmlLeft));
    } catch (error) {
      throw corrupt(error);
    }
    if (size === undefined) {
      const cap = xmlLeft < totalLeft ? limits.maxDocxXmlBytes : limits.maxDocxUnpackedBytes;
      throw new DocumentUnreadable(
        "too_large",
        `The Word document unpacks to more than ${megabytes(cap)} of data, more than Zona reads from one file. Split it into smaller documents and upload those.`,
      );
    }
    total += size;
    if (isXml) xml += size;
  }
}

function megabytes(bytes: number): string {
  return bytes >= 1024 * 1024
    ? `${Math.floor(bytes / (1024 * 1024))} MB`
    : `${bytes.toLocaleString("en")} bytes`;
}

function corrupt(cause?: unknown): DocumentUnreadable {
  return new DocumentUnreadable(
    "corrupt",
    "The Word document is damaged and cannot be read. Open it in a word processor, save it again as DOCX and upload the new file.",
    { cause },
  );
}
