/** The bounded heap of the exact vector scan: the best k of a stream, ties to the smaller id. */
import { describe, expect, it } from "vitest";
import { ranksBefore, type Scored, TopK } from "../../src/store/vectors/top-k.ts";

const byRank = (a: Scored, b: Scored) => (ranksBefore(a, b) ? -1 : ranksBefore(b, a) ? 1 : 0);

describe("TopK", () => {
  it("keeps the best k of any stream, best first, as sorting all would", () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let round = 0; round < 50; round++) {
      // Few distinct scores, so that ties are common and the id decides.
      const items = Array.from({ length: 1 + Math.floor(next() * 200) }, (_, i) => ({
        id: `p${String(Math.floor(next() * 1e6)).padStart(7, "0")}-${i}`,
        score: Math.round(next() * 20) / 20 - 0.5,
      }));
      const k = Math.floor(next() * 30);
      const top = new TopK<Scored>(k);
      for (const item of items) top.offer(item);
      expect(top.sorted()).toEqual([...items].sort(byRank).slice(0, k));
    }
  });

  it("keeps nothing when k is 0, and everything when the stream is shorter than k", () => {
    const none = new TopK<Scored>(0);
    none.offer({ id: "a", score: 1 });
    expect(none.sorted()).toEqual([]);
    const all = new TopK<Scored>(5);
    all.offer({ id: "b", score: 0.5 });
    all.offer({ id: "a", score: 0.5 });
    all.offer({ id: "c", score: 0.9 });
    expect(all.sorted().map((item) => item.id)).toEqual(["c", "a", "b"]);
  });
});
