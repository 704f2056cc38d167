/**
 * Reciprocal rank fusion: how the vector and full-text searches' hits are merged into
 * one list of candidates, and how retrievePassages asks both searches.
 */
import { describe, expect, it } from "vitest";
import { fuseRankings, RRF_K } from "../../src/services/knowledge/rank-fusion.ts";
import { type PassageSearch, retrievePassages } from "../../src/services/knowledge/retrieve-passages.ts";
import type { PassageHit } from "../../src/store/repositories/kb-passages.ts";

const rrf = (...ranks: number[]) => ranks.reduce((sum, rank) => sum + 1 / (RRF_K + rank), 0);
const fuse = (lists: string[][], limit?: number) =>
  fuseRankings(lists, (id) => id, limit === undefined ? {} : { limit }).map(({ item, score, ranks }) => ({
    id: item,
    score,
    ranks,
  }));

describe("Reciprocal rank fusion", () => {
  it.each([
    {
      case: "an item both lists find beats one list's first",
      lists: [
        ["a", "b", "c"],
        ["d", "b", "e"],
      ],
      order: ["b", "a", "d", "c", "e"],
    },
    {
      case: "equal scores: the better single rank first",
      lists: [
        ["a", "x", "b"],
        ["b", "y", "a"],
      ],
      // a and b both score 1/61 + 1/63, x and y both 1/62.
      order: ["a", "b", "x", "y"],
    },
    {
      case: "equal scores and ranks: the earlier list first",
      lists: [
        ["q", "p"],
        ["z", "o"],
      ],
      order: ["q", "z", "p", "o"],
    },
    { case: "one list alone keeps its order", lists: [["c", "a", "b"], []], order: ["c", "a", "b"] },
    { case: "no lists, nothing", lists: [[], []], order: [] },
    {
      case: "a repeat within a list counts once, at its first place",
      lists: [["a", "b", "a"], ["b"]],
      order: ["b", "a"],
    },
  ])("$case", ({ lists, order }) => {
    expect(fuse(lists).map((entry) => entry.id)).toEqual(order);
  });

  it("scores are sums of 1 / (60 + rank), with each list's rank or null", () => {
    expect(RRF_K).toBe(60);
    expect(fuse([["a", "b"], ["b"]])).toEqual([
      { id: "b", score: rrf(2, 1), ranks: [2, 1] },
      { id: "a", score: rrf(1), ranks: [1, null] },
    ]);
    expect(fuseRankings([["a"], ["a"]], (id) => id, { k: 0 })[0]?.score).toBe(2);
  });

  it("keeps the item of the first list it appears in, and at most `limit` items", () => {
    const fused = fuseRankings(
      [
        [{ id: "a", from: "vector" }],
        [
          { id: "b", from: "text" },
          { id: "a", from: "text" },
        ],
      ],
      (item) => item.id,
      { limit: 1 },
    );
    expect(fused).toEqual([{ item: { id: "a", from: "vector" }, score: rrf(1, 2), ranks: [1, 2] }]);
  });
});

function hit(id: string, score: number): PassageHit {
  return { id, documentId: "d", kbId: "k", text: id, page: null, heading: null, ordinal: 0, score };
}

/** A stand-in for the repository's two searches that records how it was asked. */
function searches(byVector: PassageHit[], byText: PassageHit[]) {
  const asked: Array<{ search: string; kbIds: readonly string[]; k: number }> = [];
  const search: PassageSearch = {
    async searchByVector(kbIds, _vector, k) {
      asked.push({ search: "vector", kbIds, k });
      return byVector.slice(0, k);
    },
    async searchByText(kbIds, _question, k) {
      asked.push({ search: "text", kbIds, k });
      return byText.slice(0, k);
    },
  };
  return { search, asked };
}

describe("retrievePassages", () => {
  it("asks both searches for max(20, 3 x topK) candidates and merges them", async () => {
    const { search, asked } = searches(
      [hit("a", 0.9), hit("b", 0.8), hit("c", 0.7)],
      [hit("c", 3), hit("d", 2)],
    );
    const found = await retrievePassages(search, { kbIds: ["k"], queryVector: [1], question: "q", topK: 5 });
    expect(asked).toEqual([
      { search: "vector", kbIds: ["k"], k: 20 },
      { search: "text", kbIds: ["k"], k: 20 },
    ]);
    expect(
      found.map((passage) => [passage.id, passage.vectorRank, passage.textRank, passage.similarity]),
    ).toEqual([
      ["c", 3, 1, 0.7],
      ["a", 1, null, 0.9],
      ["b", 2, null, 0.8],
      ["d", null, 2, null],
    ]);
    expect(found[0]?.score).toBeCloseTo(rrf(3, 1), 12);

    const many = searches([], []);
    await retrievePassages(many.search, { kbIds: ["k"], queryVector: [1], question: "q", topK: 20 });
    expect(many.asked.map((entry) => entry.k)).toEqual([60, 60]);
  });

  it("returns at most `candidates`, searches words only without a vector, nothing without bases", async () => {
    const { search, asked } = searches([hit("a", 0.9)], [hit("b", 2), hit("c", 1), hit("d", 0.5)]);
    const found = await retrievePassages(search, {
      kbIds: ["k"],
      queryVector: [],
      question: "q",
      topK: 1,
      candidates: 2,
    });
    expect(found.map((passage) => passage.id)).toEqual(["b", "c"]);
    expect(asked).toEqual([{ search: "text", kbIds: ["k"], k: 2 }]);
    expect(await retrievePassages(search, { kbIds: [], queryVector: [1], question: "q", topK: 3 })).toEqual(
      [],
    );
  });
});
