import { eq } from "drizzle-orm";
import type { Store } from "../../src/store/database.ts";
import type { NewPassage } from "../../src/store/repositories/kb-passages.ts";
import { accounts, kbDocuments, knowledgeBases } from "../../src/store/schema.ts";
import { EMBEDDING_DIMENSIONS } from "../../src/store/vectors/cosine.ts";

function fnv1a(word: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    hash ^= word.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/**
 * A deterministic stand-in for bge-m3: the words hashed into 1,024 dimensions, each with a sign and
 * a weight of its own (so that two passages sharing as many words with a question still differ in
 * similarity), normalised. Texts sharing words are near; a text is nearest to itself.
 */
export function embedText(text: string): number[] {
  const vector = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const hash = fnv1a(word);
    const index = hash % EMBEDDING_DIMENSIONS;
    vector[index] = (vector[index] ?? 0) + ((hash >>> 10) & 1 ? 1 : -1) * (1 + ((hash >>> 11) % 89) / 89);
  }
  const length = Math.hypot(...vector);
  return vector.map((value) => (length === 0 ? 0 : value / length));
}

/** Cosine similarity as the database sees it: both vectors rounded to float4 first, summed in doubles. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = Math.fround(a[i] ?? 0);
    const y = Math.fround(b[i] ?? 0);
    dot += x * y;
    aa += x * x;
    bb += y * y;
  }
  return dot / Math.sqrt(aa * bb);
}

/** A passage of the fixture: text, heading, page. */
export interface FixturePassage {
  text: string;
  heading?: string;
  page?: number;
}

/** The passages to store, embedded. */
export function passagesOf(items: readonly FixturePassage[]): Array<NewPassage & { embedding: number[] }> {
  return items.map((item, ordinal) => ({
    ordinal,
    text: item.text,
    heading: item.heading ?? null,
    page: item.page ?? null,
    embedding: embedText(`${item.heading ?? ""} ${item.text}`),
  }));
}

/** A new account with a knowledge base; returns the base's id. */
export async function makeBase(store: Store, label: string): Promise<string> {
  const suffix = `${label}-${Math.random().toString(36).slice(2, 10)}`;
  const [account] = await store.db
    .insert(accounts)
    .values({ email: `${suffix}@example.ch` })
    .returning({ id: accounts.id });
  const [base] = await store.db
    .insert(knowledgeBases)
    .values({ slug: suffix, accountId: account?.id ?? "", name: label })
    .returning({ id: knowledgeBases.id });
  return base?.id ?? "";
}

/** A new ready document in a base; returns its id. */
export async function makeDocument(store: Store, kbId: string, filename: string): Promise<string> {
  const [document] = await store.db
    .insert(kbDocuments)
    .values({ kbId, filename, format: "text", sizeBytes: 1, status: "ready" })
    .returning({ id: kbDocuments.id });
  return document?.id ?? "";
}

/** Deletes a document row (its passages go by the foreign key's cascade). */
export async function deleteDocument(store: Store, documentId: string): Promise<void> {
  await store.db.delete(kbDocuments).where(eq(kbDocuments.id, documentId));
}

/** Deletes a knowledge base row (its documents and passages go by cascade). */
export async function deleteBase(store: Store, kbId: string): Promise<void> {
  await store.db.delete(knowledgeBases).where(eq(knowledgeBases.id, kbId));
}

/** Alpine railways: a document with headings and pages. */
export const RAILWAYS: FixturePassage[] = [
  { heading: "Gotthard", page: 1, text: "The Gotthard base tunnel runs 57 kilometres under the Alps." },
  { heading: "Gotthard", page: 1, text: "Trains through the base tunnel reach 250 kilometres per hour." },
  { heading: "Gotthard", page: 2, text: "The old summit line climbs through spiral tunnels near Wassen." },
  { heading: "Bernina", page: 3, text: "The Bernina line crosses the Alps without any rack section." },
  { heading: "Bernina", page: 3, text: "Red trains of the Rhaetian railway run from Chur to Tirano." },
  { heading: "Bernina", page: 4, text: "The Brusio spiral viaduct turns the line in a full circle." },
  {
    heading: "Glacier Express",
    page: 5,
    text: "The Glacier Express links Zermatt and St. Moritz in eight hours.",
  },
  {
    heading: "Glacier Express",
    page: 5,
    text: "Panorama coaches give views of glaciers, gorges and passes.",
  },
  { heading: "Timetables", page: 6, text: "Most mountain lines run every hour from early morning." },
  { heading: "Timetables", page: 6, text: "Winter timetables may close the highest passes after snowfall." },
  { heading: "Tickets", page: 7, text: "A half-fare card halves the price of most train tickets." },
  { heading: "Tickets", page: 7, text: "Seat reservations are required on panorama trains in summer." },
];

/** Swiss cheese: a Markdown-like document whose headings carry words its text lacks. */
export const CHEESE: FixturePassage[] = [
  { heading: "Raclette", text: "Melted under a grill and scraped onto potatoes with pickles." },
  { heading: "Raclette", text: "Serve with small onions, pepper and a dry white wine." },
  { heading: "Fondue", text: "Gruyère and vacherin melted with white wine and garlic." },
  { heading: "Fondue", text: "Bread cubes are dipped with long forks into the pot." },
  { heading: "Emmentaler", text: "Large holes form from gas released during ripening." },
  { heading: "Emmentaler", text: "Wheels weigh up to 120 kilograms and ripen for months." },
  { heading: "Storage", text: "Wrap cheese in waxed paper or a cloth and keep it in the vegetable drawer." },
  { heading: "Storage", text: "Hard cheese keeps for weeks; soft cheese only for days." },
];

/** Banking, in another base; its first passage has the same text as one of RAILWAYS. */
export const BANKING: FixturePassage[] = [
  { heading: "Gotthard", page: 1, text: "The Gotthard base tunnel runs 57 kilometres under the Alps." },
  { heading: "Accounts", text: "A savings account pays interest every quarter." },
  { heading: "Accounts", text: "Transfers between own accounts are free of charge." },
  { heading: "Cards", text: "A lost card is blocked at once by calling the hotline." },
];

/** Questions asked of the fixture by vector. */
export const QUESTIONS = [
  "How long is the Gotthard base tunnel under the Alps?",
  "Which trains cross the Alps to Tirano?",
  "How do I keep cheese fresh?",
  "fondue with white wine",
  "panorama trains and glaciers in summer",
];
