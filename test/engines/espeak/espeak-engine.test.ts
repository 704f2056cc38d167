import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { EspeakEngine } from "../../../src/engines/espeak/espeak-engine.ts";
import { failure } from "../upstream-failure.ts";

const engine = new EspeakEngine();
afterAll(() => engine.close());

describe("EspeakEngine", () => {
  it("starts its worker on the first synthesis only", async () => {
    const lazy = new EspeakEngine();
    expect(lazy.started).toBe(false);
    await lazy.synthesize("ciao", "it+f3");
    expect(lazy.started).toBe(true);
    await lazy.close();
    expect(lazy.started).toBe(false);
  });

  it("serves queued requests in order, all of them", async () => {
    const order: number[] = [];
    const texts = ["uno", "due", "tre", "quattro", "cinque"];
    await Promise.all(texts.map((text, i) => engine.synthesize(text, "it+f3").then(() => order.push(i))));
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it("fails an unknown voice with a status 500, and goes on serving", async () => {
    const error = await failure(engine.synthesize("x", "xx-nonexistent"));
    expect([error.kind, error.status]).toEqual(["status", 500]);
    expect(error.message).toContain("voice does not exist");
    await expect(engine.synthesize("still here", "en-us+f3")).resolves.toBeInstanceOf(Buffer);
  });

  it("drops a queued request whose signal fires, and answers an aborted signal at once", async () => {
    const controller = new AbortController();
    const first = engine.synthesize("the first one", "en-us+f3");
    const second = engine.synthesize("the second one", "en-us+f3", controller.signal);
    const third = engine.synthesize("the third one", "en-us+f3");
    controller.abort();
    expect((await failure(second)).kind).toBe("aborted");
    await expect(Promise.all([first, third])).resolves.toHaveLength(2);
    expect((await failure(engine.synthesize("x", "it+f3", AbortSignal.abort()))).kind).toBe("aborted");
  });

  it("restarts a worker that died, failing only the request it was running", async () => {
    const running = engine.synthesize("interrupted", "it+f3");
    // Reaching into the engine is the only way to kill its worker from outside.
    await (engine as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    const error = await failure(running);
    expect([error.kind, error.status]).toEqual(["status", 500]);
    await expect(engine.synthesize("after the restart", "it+f3")).resolves.toBeInstanceOf(Buffer);
  });

  it("fails a synthesis that overruns its time with timeout and kills the worker", async () => {
    const slow = new EspeakEngine({ timeoutMs: 1 });
    expect((await failure(slow.synthesize("troppo lento", "it+f3"))).kind).toBe("timeout");
    expect(slow.started).toBe(false);
    await slow.close();
  });

  it("close fails the waiting requests; a later request starts a new worker", async () => {
    const closing = new EspeakEngine();
    const pending = [closing.synthesize("uno", "it+f3"), closing.synthesize("due", "it+f3")].map(failure);
    await closing.close();
    expect((await Promise.all(pending)).map((error) => error.kind)).toEqual(["aborted", "aborted"]);
    await expect(closing.synthesize("di nuovo", "it+f3")).resolves.toBeInstanceOf(Buffer);
    await closing.close();
  });

  it("never keeps the process alive: a script that speaks and does not close exits by itself", async () => {
    const dir = await mkdtemp(join(tmpdir(), "zona-espeak-"));
    try {
      const script = join(dir, "speak.ts");
      const engineUrl = new URL("../../../src/engines/espeak/espeak-engine.ts", import.meta.url).href;
      await writeFile(
        script,
        `import { EspeakEngine } from ${JSON.stringify(engineUrl)};\n` +
          `const wav = await new EspeakEngine().synthesize("ciao a tutti", "it+f3");\n` +
          "console.log(wav.subarray(0, 4).toString(), wav.length > 10000);\n",
      );
      const { stdout } = await promisify(execFile)(process.execPath, [script], { timeout: 20_000 });
      expect(stdout.trim()).toBe("RIFF true");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
