/**
 * Knowledge-base passages in the database: written per document, found by vector
 * similarity on both paths (pgvector in PGlite, the exact scan in the process where PostgreSQL has
 * no pgvector or where a test forces it) with the same passages in the same order, and by full
 * text; never outside the bases asked.
 */
import { count, eq, sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { retrievePassages } from "../../src/services/knowledge/retrieve-passages.ts";
import type { Store } from "../../src/store/database.ts";
import {
  type KbPassagesOptions,
  KbPassagesRepository,
  type VectorPath,
} from "../../src/store/repositories/kb-passages.ts";
import { kbPassages } from "../../src/store/schema.ts";
import { openTestStore, STORE_KINDS } from "../helpers/test-store.ts";
import {
  BANKING,
  CHEESE,
  cosine,
  deleteBase,
  deleteDocument,
  embedText,
  type FixturePassage,
  makeBase,
  makeDocument,
  passagesOf,
  QUESTIONS,
  RAILWAYS,
} from "./passage-fixtures.ts";

/** One way of storing and searching: a database and the repository's options. */
interface Variant {
  name: string;
  kind: "pglite" | "postgres";
  options: KbPassagesOptions;
  /** The path this store must take. */
  expected(store: Store): Promise<VectorPath>;
}

// A page of 5 makes the scan cross several pages on this small fixture.
const VARIANTS: Variant[] = [
  { name: "PGlite with pgvector", kind: "pglite", options: {}, expected: async () => "pgvector" },
  {
    name: "PGlite, exact scan forced",
    kind: "pglite",
    options: { vectorSearch: "scan", scanPageSize: 5 },
    expected: async () => "scan",
  },
  ...(STORE_KINDS.includes("postgres")
    ? [
        {
          name: "PostgreSQL",
          kind: "postgres" as const,
          options: { scanPageSize: 5 },
          // pgvector exactly where the server offers it (CI's and the local PostgreSQL 15 do not).
          expected: async (store: Store) => {
            const result = await store.db.execute(
              sql`SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'vector'`,
            );
            const [row] = (result as unknown as { rows: Array<{ n: number }> }).rows;
            return row?.n === 1 ? "pgvector" : "scan";
          },
        },
      ]
    : []),
];

// Both PGlite variants share one database (a PGlite start costs seconds); each makes its own bases.
let pglite: Promise<Store> | undefined;
const opened: Array<Promise<Store>> = [];
function storeFor(kind: "pglite" | "postgres"): Promise<Store> {
  if (kind === "pglite") {
    pglite ??= openTestStore("pglite");
    if (!opened.includes(pglite)) opened.push(pglite);
    return pglite;
  }
  const store = openTestStore("postgres");
  opened.push(store);
  return store;
}
afterAll(async () => {
  for (const store of opened) await (await store).close();
});

/** A stored passage as the reference sees it. */
interface Stored {
  id: string;
  kbId: string;
  embedding: number[];
}

/** The k nearest by cosine, computed here (ties to the smaller id): what every path must answer. */
function reference(stored: Stored[], kbIds: string[], question: string, k: number) {
  const query = embedText(question);
  return stored
    .filter((passage) => kbIds.includes(passage.kbId))
    .map((passage) => ({ id: passage.id, score: cosine(query, passage.embedding) }))
    .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1))
    .slice(0, k);
}

async function passageCount(store: Store, documentId: string): Promise<number> {
  const [row] = await store.db
    .select({ n: count() })
    .from(kbPassages)
    .where(eq(kbPassages.documentId, documentId));
  return row?.n ?? 0;
}

describe.each(VARIANTS)("Knowledge-base passages on $name", (variant) => {
  let store: Store;
  let repo: KbPassagesRepository;
  let alpine: string;
  let bank: string;
  const stored: Stored[] = [];

  async function addDocument(kbId: string, filename: string, items: FixturePassage[]): Promise<void> {
    const documentId = await makeDocument(store, kbId, filename);
    const passages = passagesOf(items);
    expect(await repo.replace(documentId, kbId, passages)).toBe(passages.length);
    const rows = await store.db
      .select({ id: kbPassages.id, ordinal: kbPassages.ordinal })
      .from(kbPassages)
      .where(eq(kbPassages.documentId, documentId));
    for (const row of rows) {
      stored.push({ id: row.id, kbId, embedding: passages[row.ordinal]?.embedding ?? [] });
    }
  }

  beforeAll(async () => {
    store = await storeFor(variant.kind);
    repo = new KbPassagesRepository(store.db, variant.options);
    alpine = await makeBase(store, "alpine");
    bank = await makeBase(store, "bank");
    await addDocument(alpine, "railways.pdf", RAILWAYS);
    await addDocument(alpine, "cheese.md", CHEESE);
    await addDocument(bank, "banking.txt", BANKING);
  });

  it("takes the vector path its database offers", async () => {
    expect(await repo.vectorPath()).toBe(await variant.expected(store));
  });

  it("vector search: the k nearest passages by cosine, in order, with their similarity", async () => {
    for (const question of QUESTIONS) {
      for (const k of [1, 5, 20]) {
        const expected = reference(stored, [alpine], question, k);
        // The fixture must not hold near-ties, which float rounding could order either way; exact
        // ties (passages sharing no word with the question) go to the smaller id on every path.
        const next = reference(stored, [alpine], question, k + 1).map((hit) => hit.score);
        for (let i = 1; i < next.length; i++) {
          const [before = 0, after = 0] = [next[i - 1], next[i]];
          if (before !== 0 || after !== 0) expect(before - after).toBeGreaterThan(1e-5);
        }
        const hits = await repo.searchByVector([alpine], embedText(question), k);
        expect(
          hits.map((hit) => hit.id),
          `${question} (k=${k})`,
        ).toEqual(expected.map((hit) => hit.id));
        hits.forEach((hit, i) => {
          expect(hit.score).toBeCloseTo(expected[i]?.score ?? Number.NaN, 5);
        });
      }
    }
  });

  it("vector search: a hit carries its passage, document, base and place", async () => {
    const [hit] = await repo.searchByVector([alpine], embedText("Brusio spiral viaduct"), 1);
    expect(hit).toMatchObject({
      kbId: alpine,
      ordinal: 5,
      heading: "Bernina",
      page: 4,
      text: "The Brusio spiral viaduct turns the line in a full circle.",
    });
    expect(hit?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(hit?.score).toBeGreaterThan(0.4);
  });

  it("searches only the bases asked: another base's passages never appear", async () => {
    // BANKING's first passage is word for word one of RAILWAYS: as near as a passage can be.
    const gotthard = embedText("Gotthard The Gotthard base tunnel runs 57 kilometres under the Alps.");
    const inAlpine = await repo.searchByVector([alpine], gotthard, 100);
    expect(inAlpine).toHaveLength(RAILWAYS.length + CHEESE.length);
    expect(inAlpine.every((hit) => hit.kbId === alpine)).toBe(true);
    const inBank = await repo.searchByVector([bank], gotthard, 100);
    expect(inBank.map((hit) => hit.kbId)).toEqual(BANKING.map(() => bank));
    const inBoth = await repo.searchByVector([alpine, bank], gotthard, 2);
    expect(new Set(inBoth.map((hit) => hit.kbId))).toEqual(new Set([alpine, bank]));
    expect(inBoth[0]?.score).toBeCloseTo(1, 5);
    expect(await repo.searchByVector([], gotthard, 5)).toEqual([]);

    const byText = await repo.searchByText([alpine], "Gotthard tunnel", 100);
    expect(byText.length).toBeGreaterThan(0);
    expect(byText.every((hit) => hit.kbId === alpine)).toBe(true);
    expect((await repo.searchByText([alpine, bank], "Gotthard tunnel", 100)).length).toBe(byText.length + 1);
    expect(await repo.searchByText([bank], "raclette", 10)).toEqual([]);
  });

  it("full text: words of headings and of texts, all of them, best ranked first", async () => {
    // "Raclette" is only in the headings of its passages.
    const raclette = await repo.searchByText([alpine], "raclette", 10);
    expect(raclette.map((hit) => hit.heading)).toEqual(["Raclette", "Raclette"]);
    expect(raclette.every((hit) => !/raclette/i.test(hit.text))).toBe(true);
    // Every word must be there: two passages speak of white wine.
    const wine = await repo.searchByText([alpine], "white wine", 10);
    expect(wine.map((hit) => hit.text).sort()).toEqual([
      "Gruyère and vacherin melted with white wine and garlic.",
      "Serve with small onions, pepper and a dry white wine.",
    ]);
    // Twice the word ranks above once.
    const cheese = await repo.searchByText([alpine], "cheese", 10);
    expect(cheese.map((hit) => hit.text)).toEqual([
      "Hard cheese keeps for weeks; soft cheese only for days.",
      "Wrap cheese in waxed paper or a cloth and keep it in the vegetable drawer.",
    ]);
    expect(cheese[0]?.score).toBeGreaterThan(cheese[1]?.score ?? 0);
    expect(await repo.searchByText([alpine], "cheese", 1)).toHaveLength(1);
  });

  it("full text: any word of the question matches, passages with more of its words first", async () => {
    const phrase = await repo.searchByText([alpine], "How long is the Gotthard base tunnel?", 10);
    expect(phrase[0]?.text).toBe("The Gotthard base tunnel runs 57 kilometres under the Alps.");
    const either = await repo.searchByText([alpine], "raclette fondue", 10);
    expect(either.map((hit) => hit.heading).sort()).toEqual(["Fondue", "Fondue", "Raclette", "Raclette"]);
    // Operators are no syntax here: only the words count.
    const excluded = await repo.searchByText([alpine], "-emmentaler", 10);
    expect(excluded.map((hit) => hit.heading)).toEqual(["Emmentaler", "Emmentaler"]);
    expect(await repo.searchByText([alpine], "?! -", 10)).toEqual([]);
    expect(await repo.searchByText([alpine], "   ", 10)).toEqual([]);
  });

  it("replaces a document's passages at once, and refuses embeddings of the wrong size", async () => {
    const kbId = await makeBase(store, "replace");
    const documentId = await makeDocument(store, kbId, "notes.txt");
    await repo.replace(documentId, kbId, passagesOf(RAILWAYS));
    expect(await passageCount(store, documentId)).toBe(RAILWAYS.length);
    expect(await repo.replace(documentId, kbId, passagesOf(CHEESE.slice(0, 3)))).toBe(3);
    expect(await passageCount(store, documentId)).toBe(3);
    expect(await repo.searchByText([kbId], "Gotthard", 10)).toEqual([]);
    const hits = await repo.searchByVector([kbId], embedText("fondue"), 10);
    expect(hits.map((hit) => hit.ordinal).sort()).toEqual([0, 1, 2]);

    const wrong = passagesOf(CHEESE).map((passage, i) =>
      i === 2 ? { ...passage, embedding: passage.embedding.slice(0, 768) } : passage,
    );
    await expect(repo.replace(documentId, kbId, wrong)).rejects.toThrow(RangeError);
    const nan = passagesOf(CHEESE).map((passage) => ({ ...passage, embedding: [...passage.embedding] }));
    nan[1]?.embedding.splice(0, 1, Number.NaN);
    await expect(repo.replace(documentId, kbId, nan)).rejects.toThrow(RangeError);
    expect(await passageCount(store, documentId)).toBe(3);
    await expect(repo.replace(documentId, alpine, passagesOf(CHEESE))).rejects.toThrow(
      /not in knowledge base/,
    );
    expect(await passageCount(store, documentId)).toBe(3);
    await expect(repo.searchByVector([kbId], [1, 2, 3], 5)).rejects.toThrow(RangeError);
    expect(await repo.searchByVector([kbId], new Array(1024).fill(0), 5)).toEqual([]);

    // A document deleted while it was read: nothing is written.
    await deleteDocument(store, documentId);
    expect(await repo.replace(documentId, kbId, passagesOf(CHEESE))).toBe(0);
    expect(await passageCount(store, documentId)).toBe(0);
  });

  it("two replacements of one document at once leave one set of passages", async () => {
    const kbId = await makeBase(store, "race");
    const documentId = await makeDocument(store, kbId, "race.txt");
    const written = await Promise.all([
      repo.replace(documentId, kbId, passagesOf(RAILWAYS)),
      repo.replace(documentId, kbId, passagesOf(CHEESE)),
    ]);
    expect(written).toEqual([RAILWAYS.length, CHEESE.length]);
    expect([RAILWAYS.length, CHEESE.length]).toContain(await passageCount(store, documentId));
  });

  it("deleting a document or a base deletes its passages", async () => {
    const kbId = await makeBase(store, "delete");
    const first = await makeDocument(store, kbId, "first.txt");
    const second = await makeDocument(store, kbId, "second.txt");
    const third = await makeDocument(store, kbId, "third.txt");
    await repo.replace(first, kbId, passagesOf(RAILWAYS));
    await repo.replace(second, kbId, passagesOf(CHEESE));
    await repo.replace(third, kbId, passagesOf(BANKING));

    expect(await repo.deleteByDocument(first)).toBe(RAILWAYS.length);
    expect(await passageCount(store, first)).toBe(0);
    await deleteDocument(store, second);
    expect(await passageCount(store, second)).toBe(0);
    expect(
      (await repo.searchByVector([kbId], embedText("cheese"), 100)).map((hit) => hit.documentId),
    ).toEqual(BANKING.map(() => third));
    await deleteBase(store, kbId);
    expect(await passageCount(store, third)).toBe(0);
    expect(await repo.searchByText([kbId], "card", 10)).toEqual([]);
  });

  it("retrieval merges both searches: each passage once, the one both find first", async () => {
    const hits = await retrievePassages(repo, {
      kbIds: [alpine],
      queryVector: embedText("fondue with white wine"),
      question: "fondue with white wine",
      topK: 3,
    });
    expect(hits.length).toBe(RAILWAYS.length + CHEESE.length);
    expect(new Set(hits.map((hit) => hit.id)).size).toBe(hits.length);
    expect(hits[0]).toMatchObject({
      text: "Gruyère and vacherin melted with white wine and garlic.",
      vectorRank: 1,
      textRank: 1,
    });
    expect(hits[0]?.similarity).toBeGreaterThan(0.5);
    expect(hits.every((hit) => hit.kbId === alpine)).toBe(true);
    const scores = hits.map((hit) => hit.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    // Words only, when the question could not be embedded.
    const byWords = await retrievePassages(repo, {
      kbIds: [alpine],
      queryVector: [],
      question: "raclette",
      topK: 5,
    });
    expect(byWords.map((hit) => [hit.heading, hit.vectorRank])).toEqual([
      ["Raclette", null],
      ["Raclette", null],
    ]);
  });
});

describe("Knowledge-base passages: pgvector and the exact scan agree (PGlite)", () => {
  let store: Store;
  let withPgvector: KbPassagesRepository;
  let scanning: KbPassagesRepository;
  let bases: string[];

  beforeAll(async () => {
    store = await storeFor("pglite");
    withPgvector = new KbPassagesRepository(store.db);
    scanning = new KbPassagesRepository(store.db, { vectorSearch: "scan", scanPageSize: 4 });
    bases = [await makeBase(store, "agree-a"), await makeBase(store, "agree-b")];
    const [a = "", b = ""] = bases;
    await withPgvector.replace(await makeDocument(store, a, "railways.pdf"), a, passagesOf(RAILWAYS));
    await withPgvector.replace(await makeDocument(store, a, "cheese.md"), a, passagesOf(CHEESE));
    await withPgvector.replace(await makeDocument(store, b, "banking.txt"), b, passagesOf(BANKING));
  });

  it("the same passages in the same order, with the same similarity", async () => {
    expect(await withPgvector.vectorPath()).toBe("pgvector");
    expect(await scanning.vectorPath()).toBe("scan");
    for (const question of [
      ...QUESTIONS,
      "Gotthard The Gotthard base tunnel runs 57 kilometres under the Alps.",
    ]) {
      for (const kbIds of [bases.slice(0, 1), bases]) {
        for (const k of [1, 7, 30]) {
          const a = await withPgvector.searchByVector(kbIds, embedText(question), k);
          const b = await scanning.searchByVector(kbIds, embedText(question), k);
          expect(
            a.map((hit) => hit.id),
            `${question} (k=${k})`,
          ).toEqual(b.map((hit) => hit.id));
          a.forEach((hit, i) => {
            expect(hit).toMatchObject({ ...b[i], score: expect.any(Number) });
            expect(hit.score).toBeCloseTo(b[i]?.score ?? Number.NaN, 5);
          });
        }
      }
    }
  });
});
