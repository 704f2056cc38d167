import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { UpstreamClient } from "../../../src/engines/http/upstream-client.ts";
import { FakePiperServer, FakeServer, FakeWhisperServer, fakeMachine, toneWav } from "../../fakes/index.ts";
import { failure } from "../upstream-failure.ts";

const whisper = new FakeWhisperServer();
const piper = new FakePiperServer();
// Answers `size` bytes of audio, with or without a content-length.
const sized = new FakeServer({
  errorBody: (_status, message) => message,
  handle: (request) => {
    const size = Number(request.path.slice(1));
    return { type: "binary", status: 200, contentType: "audio/wav", body: Buffer.alloc(size, 1) };
  },
});
let client: UpstreamClient;
let dir: string;
const signal = () => new AbortController().signal;

beforeAll(async () => {
  await Promise.all([whisper.start(), piper.start(), sized.start()]);
  client = new UpstreamClient({ headersMs: 300 });
  dir = await mkdtemp(join(tmpdir(), "zona-upload-"));
});
afterAll(async () => {
  try {
    await client.close();
    await Promise.all([whisper.close(), piper.close(), sized.close()]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
afterEach(async () => {
  await Promise.all([whisper.setMode("normal"), piper.setMode("normal")]);
  whisper.clearRequests();
});

describe("UpstreamClient.upload", () => {
  it("streams a large file from disk with repeated fields, and reuses the connection", async () => {
    const path = join(dir, "big.wav");
    const wav = toneWav({ seconds: 120, sampleRate: 16_000 });
    await writeFile(path, wav);
    const machine = fakeMachine("whisper", whisper.url, { api_key: "k" });
    for (let i = 0; i < 6; i++) {
      await client.upload({
        machine,
        path: "/v1/audio/transcriptions",
        fields: [
          ["model", "asr-1"],
          ["timestamp_granularities[]", "segment"],
          ["timestamp_granularities[]", "word"],
        ],
        file: { field: "file", path, filename: "big.wav", type: "audio/wav" },
        signal: signal(),
      });
    }
    expect(whisper.requests).toHaveLength(6);
    expect(whisper.connections).toBeLessThanOrEqual(2);
    expect(whisper.lastUpload.fields).toEqual([
      ["model", "asr-1"],
      ["timestamp_granularities[]", "segment"],
      ["timestamp_granularities[]", "word"],
    ]);
    expect(whisper.lastUpload.files[0]).toMatchObject({ size: wav.length, head: wav.subarray(0, 16) });
    expect(whisper.lastRequest.headers["content-length"]).toBeDefined();
  });

  it("fails a refused, hanging or erroring server like the JSON calls", async () => {
    const path = join(dir, "small.wav");
    await writeFile(path, toneWav({ seconds: 0.1 }));
    const upload = () =>
      client.upload({
        machine: fakeMachine("whisper", whisper.url),
        path: "/v1/audio/transcriptions",
        fields: [["model", "asr-1"]],
        file: { field: "file", path, filename: "small.wav", type: "audio/wav" },
        signal: signal(),
      });
    await whisper.setMode("refuse");
    expect((await failure(upload())).kind).toBe("connect");
    await whisper.setMode("hang");
    expect((await failure(upload())).kind).toBe("timeout");
    await whisper.setMode("error500", { errorStatus: 503 });
    const status = await failure(upload());
    expect([status.kind, status.status, status.retryable]).toEqual(["status", 503, true]);
  });
});

describe("UpstreamClient.binary", () => {
  it("returns the bytes and the content type", async () => {
    const answer = await client.binary(
      {
        machine: fakeMachine("piper", piper.url),
        path: "/synthesize",
        body: { text: "ciao" },
        signal: signal(),
      },
      "audio/wav",
    );
    expect(answer.contentType).toBe("audio/wav");
    expect(answer.body.subarray(0, 4).toString()).toBe("RIFF");
  });

  it("cuts an answer larger than the limit as a protocol failure", async () => {
    const machine = fakeMachine("piper", sized.url);
    const get = (size: number) =>
      client.binary({ machine, path: `/${size}`, signal: signal() }, "audio/wav", 1_000);
    expect((await get(1_000)).body).toHaveLength(1_000);
    const error = await failure(get(1_001));
    expect(error.kind).toBe("protocol");
    expect(error.message).toContain("larger than 1000 bytes");
    // The connection was given up, not the client: the next call works.
    expect((await get(10)).body).toHaveLength(10);
  });

  it("a binary answer trickled a byte every 50 ms is cut at the headers timeout from the send (hostile engines)", async () => {
    let sent = 0;
    let closed = false;
    const trickle = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "audio/wav", "content-length": "10000" });
      const timer = setInterval(() => {
        sent += 1;
        response.write("x");
      }, 50);
      response.on("close", () => {
        clearInterval(timer);
        closed = true;
      });
    });
    await new Promise<void>((resolve) => trickle.listen(0, "127.0.0.1", resolve));
    try {
      const address = trickle.address() as AddressInfo;
      const machine = fakeMachine("piper", `http://127.0.0.1:${address.port}`);
      const started = performance.now();
      const error = await failure(
        client.binary({ machine, path: "/synthesize", signal: signal() }, "audio/wav"),
      );
      expect(error.kind).toBe("timeout");
      // headersMs is 300 here; its timers tick every ~0.5 s (the silence timer alone would wait for all 10,000 bytes).
      expect(performance.now() - started).toBeLessThan(3_000);
      await expect.poll(() => closed).toBe(true);
      expect(sent).toBeLessThan(100);
    } finally {
      trickle.closeAllConnections();
      await new Promise((resolve) => trickle.close(resolve));
    }
  });

  it("maps 4xx to a status failure and a cut answer to connect", async () => {
    const machine = fakeMachine("piper", piper.url);
    const error = await failure(
      client.binary({ machine, path: "/synthesize", body: { text: "" }, signal: signal() }, "audio/wav"),
    );
    expect([error.kind, error.status, error.retryable]).toEqual(["status", 400, false]);
    await piper.setMode("dropMidStream");
    const cut = await failure(
      client.binary({ machine, path: "/synthesize", body: { text: "ciao" }, signal: signal() }, "audio/wav"),
    );
    expect(cut.kind).toBe("connect");
  });
});
