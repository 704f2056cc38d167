import { count } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imageFiles } from "../../src/store/schema.ts";
import { startTestApp } from "../helpers/test-app.ts";
import { STORE_KINDS } from "../helpers/test-store.ts";
import { type ImageStack, startImageStack } from "./image-stack.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

describe.each(STORE_KINDS)("Images / signed links (%s)", (kind) => {
  let s: ImageStack;
  beforeAll(async () => {
    s = await startImageStack({
      store: kind,
      config: { server: { trust_proxy: true } },
    });
  });
  afterAll(() => s.close());

  /** Makes n pictures as links and returns their URLs. */
  const links = async (n = 1, headers: Record<string, string> = {}): Promise<string[]> => {
    const answer = await s.generate({ prompt: "a lantern", n, response_format: "url" }, { headers });
    expect(answer.status).toBe(200);
    return answer.body.data.map((item: { url: string }) => item.url);
  };
  /** GETs a link (path and query) from an address of its own, without a key. */
  let address = 0;
  const open = (pathAndQuery: string, headers: Record<string, string> = {}) => {
    address += 1;
    return s.t.fetch(pathAndQuery, {
      headers: { "x-forwarded-for": `198.51.100.${address % 250}`, ...headers },
    });
  };
  const pathOf = (url: string) => {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  };
  const rows = async () => (await s.t.store.db.select({ n: count() }).from(imageFiles))[0]?.n ?? 0;

  it("a valid link serves the PNG without a key, also when a wrong key is sent", async () => {
    const [url] = await links();
    const plain = await open(pathOf(url as string));
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toBe("image/png");
    const withKey = await open(pathOf(url as string), { authorization: "Bearer sk-not-a-key" });
    expect(withKey.status).toBe(200);
  });

  it("the link is absolute at the address the client used (X-Forwarded-Proto/Host behind a trusted proxy)", async () => {
    const [url] = await links(1, { "x-forwarded-proto": "https", "x-forwarded-host": "images.example.com" });
    expect(url).toMatch(/^https:\/\/images\.example\.com\/v1\/images\/file\//);
  });

  it("pictures of b64_json answers are never kept", async () => {
    const before = await rows();
    const answer = await s.generate({ prompt: "a lantern", n: 2 });
    expect(answer.status).toBe(200);
    expect(await rows()).toBe(before);
  });

  describe("every tampering is 403 (JSON, never 5xx)", () => {
    let good: string;
    let other: string;
    beforeAll(async () => {
      const [a, b] = await links(2);
      good = pathOf(a as string);
      other = pathOf(b as string);
    });
    const parts = (link: string) => {
      const url = new URL(link, "http://x");
      return {
        path: url.pathname,
        expires: url.searchParams.get("expires") as string,
        signature: url.searchParams.get("signature") as string,
      };
    };
    const flip = (hex: string) => `${hex.slice(0, -1)}${hex.endsWith("0") ? "1" : "0"}`;
    const cases: Array<{ rule: string; make: () => string }> = [
      {
        rule: "signature changed",
        make: () =>
          `${parts(good).path}?expires=${parts(good).expires}&signature=${flip(parts(good).signature)}`,
      },
      {
        rule: "signature in capitals",
        make: () =>
          `${parts(good).path}?expires=${parts(good).expires}&signature=${parts(good).signature.toUpperCase()}`,
      },
      {
        rule: "signature cut short",
        make: () =>
          `${parts(good).path}?expires=${parts(good).expires}&signature=${parts(good).signature.slice(0, 32)}`,
      },
      { rule: "signature missing", make: () => `${parts(good).path}?expires=${parts(good).expires}` },
      {
        rule: "signature empty",
        make: () => `${parts(good).path}?expires=${parts(good).expires}&signature=`,
      },
      { rule: "signature given twice", make: () => `${good}&signature=${parts(good).signature}` },
      {
        rule: "expiry moved later",
        make: () =>
          `${parts(good).path}?expires=${Number(parts(good).expires) + 1}&signature=${parts(good).signature}`,
      },
      {
        rule: "expiry far in the future",
        make: () => `${parts(good).path}?expires=99999999999&signature=${parts(good).signature}`,
      },
      {
        rule: "expiry not a number",
        make: () => `${parts(good).path}?expires=tomorrow&signature=${parts(good).signature}`,
      },
      { rule: "expiry missing", make: () => `${parts(good).path}?signature=${parts(good).signature}` },
      { rule: "no query at all", make: () => parts(good).path },
      {
        rule: "another picture's signature",
        make: () => `${parts(good).path}?expires=${parts(other).expires}&signature=${parts(other).signature}`,
      },
      {
        rule: "path with another id",
        make: () => `${parts(other).path}?expires=${parts(good).expires}&signature=${parts(good).signature}`,
      },
      {
        rule: "path with another extension",
        make: () =>
          `${parts(good).path.replace(".png", ".jpg")}?expires=${parts(good).expires}&signature=${parts(good).signature}`,
      },
      {
        rule: "path in capitals",
        make: () =>
          `${parts(good).path.toUpperCase().replace("/V1/IMAGES/FILE/", "/v1/images/file/")}?expires=${parts(good).expires}&signature=${parts(good).signature}`,
      },
      {
        rule: "path percent-encoded",
        make: () =>
          `${parts(good).path.replace(".png", "%2Epng")}?expires=${parts(good).expires}&signature=${parts(good).signature}`,
      },
      {
        rule: "a name that is no id",
        make: () =>
          `/v1/images/file/..%2F..%2Fetc.png?expires=${parts(good).expires}&signature=${parts(good).signature}`,
      },
    ];
    it.each(cases)("$rule", async ({ make }) => {
      const answer = await open(make());
      expect(answer.status).toBe(403);
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
      expect(((await answer.json()) as { error: unknown }).error).toMatchObject({
        code: "invalid_signature",
      });
    });

    it("the untouched link still works, also with a parameter a client added", async () => {
      expect((await open(good)).status).toBe(200);
      expect((await open(`${good}&cache=1`)).status).toBe(200);
    });
  });

  it("Cache-Control counts down; after 24 hours the link answers 410 and the sweep deletes the picture", async () => {
    const [url] = await links();
    const link = pathOf(url as string);
    const start = s.clock.at;
    try {
      s.clock.at = start + 60 * 60 * 1000;
      const later = await open(link);
      expect(later.headers.get("cache-control")).toBe("private, max-age=82800");
      const kept = await rows();
      s.clock.at = start + DAY_MS + 1000;
      const expired = await open(link);
      expect(expired.status).toBe(410);
      expect(((await expired.json()) as { error: { code: string } }).error.code).toBe("link_expired");
      const deleted = await s.t.app.services.imageFiles.sweep();
      expect(deleted).toBeGreaterThanOrEqual(1);
      expect(await rows()).toBeLessThan(kept);
      expect((await open(link)).status).toBe(410);
    } finally {
      s.clock.at = start;
    }
  });

  it("the sweep leaves pictures whose links still work", async () => {
    const [url] = await links();
    await s.t.app.services.imageFiles.sweep();
    expect((await open(pathOf(url as string))).status).toBe(200);
  });

  it("a link made by one app is served by a second app on the same store", async () => {
    const [url] = await links();
    const second = await startTestApp({ store: s.t.store, config: { server: { trust_proxy: true } } });
    try {
      const answer = await second.fetch(pathOf(url as string));
      expect(answer.status).toBe(200);
      expect(answer.headers.get("content-type")).toBe("image/png");
    } finally {
      await second.close();
    }
  });
});

describe("Images / GET /v1/images/file: 120 per minute per address, twenty times wider from trusted networks", () => {
  let s: ImageStack;
  let link: string;
  beforeAll(async () => {
    s = await startImageStack({ config: { server: { trust_proxy: true } }, trustedNetworks: ["10.0.0.0/8"] });
    const answer = await s.generate({ prompt: "a lantern", response_format: "url" });
    const url = new URL(answer.body.data[0].url);
    link = `${url.pathname}${url.search}`;
  });
  afterAll(() => s.close());

  const statuses = async (n: number, from: string) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const answer = await s.t.fetch(link, { headers: { "x-forwarded-for": from } });
      await answer.arrayBuffer();
      out.push(answer.status);
    }
    return out;
  };

  it("the 121st request of an address in a minute is 429 Too Many Attempts.; another address still passes", async () => {
    const first = await statuses(120, "203.0.113.9");
    expect(first.every((status) => status === 200)).toBe(true);
    const refused = await s.t.fetch(link, { headers: { "x-forwarded-for": "203.0.113.9" } });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    expect(refused.headers.get("retry-after")).not.toBeNull();
    expect((await statuses(1, "203.0.113.10"))[0]).toBe(200);
  });

  it("from a trusted network the limit is 2,400: the 121st request passes", async () => {
    expect((await statuses(121, "10.1.2.3")).every((status) => status === 200)).toBe(true);
    const answer = await s.t.fetch(link, { headers: { "x-forwarded-for": "10.1.2.3" } });
    expect(answer.headers.get("x-ratelimit-limit")).toBe("2400");
  });
});
