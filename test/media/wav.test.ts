import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseWavHeader, readWavInfo, WavError, wavPcm16 } from "../../src/media/wav.ts";
import { chunk, encodeWav, riffFile, silenceWav, tempFolder, toneWav } from "./wav-fixtures.ts";

let folder: Awaited<ReturnType<typeof tempFolder>>;
beforeAll(async () => {
  folder = await tempFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

/** The fmt and data chunks of a one-second 16 kHz mono 16-bit tone, to rearrange. */
function parts() {
  const wav = toneWav({ seconds: 1 });
  return { fmt: wav.subarray(12, 36), data: wav.subarray(36), samples: wav.subarray(44) };
}

function infoList(entries: [string, string][]): Buffer {
  return chunk(
    "LIST",
    Buffer.concat([Buffer.from("INFO"), ...entries.map(([id, text]) => chunk(id, Buffer.from(text)))]),
  );
}

describe("WAV header parsing", () => {
  it.each([
    {
      name: "16-bit PCM mono 16 kHz",
      wav: toneWav({ seconds: 2 }),
      expected: {
        formatTag: "pcm",
        channels: 1,
        sampleRate: 16000,
        bitsPerSample: 16,
        blockAlign: 2,
        dataOffset: 44,
        dataBytes: 64000,
        durationSeconds: 2,
      },
    },
    {
      name: "16-bit PCM stereo 44.1 kHz",
      wav: toneWav({ seconds: 0.5, channels: 2, sampleRate: 44100 }),
      expected: {
        formatTag: "pcm",
        channels: 2,
        sampleRate: 44100,
        bitsPerSample: 16,
        blockAlign: 4,
        dataBytes: 88200,
        durationSeconds: 0.5,
      },
    },
    {
      name: "8-bit PCM",
      wav: toneWav({ bits: 8 }),
      expected: { formatTag: "pcm", bitsPerSample: 8, blockAlign: 1, dataBytes: 16000, durationSeconds: 1 },
    },
    {
      name: "24-bit PCM",
      wav: toneWav({ bits: 24 }),
      expected: { formatTag: "pcm", bitsPerSample: 24, blockAlign: 3, dataBytes: 48000, durationSeconds: 1 },
    },
    {
      name: "24-bit PCM, WAVE_FORMAT_EXTENSIBLE",
      wav: toneWav({ bits: 24, extensible: true }),
      expected: { formatTag: "pcm", bitsPerSample: 24, dataOffset: 68, durationSeconds: 1 },
    },
    {
      name: "32-bit float",
      wav: toneWav({ float: true }),
      expected: { formatTag: "float", bitsPerSample: 32, blockAlign: 4, durationSeconds: 1 },
    },
    {
      name: "32-bit float, WAVE_FORMAT_EXTENSIBLE",
      wav: toneWav({ float: true, extensible: true }),
      expected: { formatTag: "float", bitsPerSample: 32 },
    },
  ])("reads $name", ({ wav, expected }) => {
    const parsed = parseWavHeader(wav);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(parsed.info).toMatchObject(expected);
  });

  it("finds data after a LIST/INFO chunk with odd-sized entries", () => {
    const { fmt, data } = parts();
    const list = infoList([
      ["ISFT", "Lavf59"],
      ["INAM", "odd"],
    ]);
    const wav = riffFile([fmt, list, data]);
    const parsed = parseWavHeader(wav);
    expect(parsed).toMatchObject({ ok: true, info: { dataOffset: 36 + list.length + 8, dataBytes: 32000 } });
  });

  it("steps over the pad byte of an odd-sized unknown chunk", () => {
    const { fmt, data } = parts();
    const odd = chunk("junk", Buffer.from("abc"));
    expect(odd.length).toBe(12); // 8 header + 3 body + 1 pad
    const wav = riffFile([odd, fmt, data]);
    expect(parseWavHeader(wav)).toMatchObject({
      ok: true,
      info: { dataOffset: 12 + 12 + 24 + 8, dataBytes: 32000 },
    });
  });

  it.each([
    { name: "0xFFFFFFFF (streamed)", declared: 0xffffffff },
    { name: "larger than the file", declared: 1_000_000 },
  ])("clamps a data size of $name to the bytes present", ({ declared }) => {
    const { fmt, samples } = parts();
    const wav = riffFile([fmt, chunk("data", samples, declared)]);
    expect(parseWavHeader(wav)).toMatchObject({ ok: true, info: { dataBytes: 32000, durationSeconds: 1 } });
  });

  it("cuts a dangling half frame off the data", () => {
    const { fmt, samples } = parts();
    const wav = riffFile([fmt, chunk("data", samples.subarray(0, 3001))]);
    expect(parseWavHeader(wav)).toMatchObject({ ok: true, info: { dataBytes: 3000 } });
  });

  it("reads the header from the head of a file when told the file's size", () => {
    const wav = toneWav({ seconds: 3 });
    expect(parseWavHeader(wav.subarray(0, 64), wav.length)).toMatchObject({
      ok: true,
      info: { dataBytes: 96000, durationSeconds: 3 },
    });
  });

  it.each([
    { name: "not RIFF", wav: Buffer.from("RIFX\0\0\0\0WAVEfmt "), reason: /RIFF\/WAVE/ },
    { name: "RIFF but not WAVE", wav: Buffer.from("RIFF\x04\0\0\0AVI LIST"), reason: /RIFF\/WAVE/ },
    { name: "cut inside the first chunk header", wav: toneWav().subarray(0, 16), reason: /no fmt chunk/ },
    { name: "cut inside the fmt chunk", wav: toneWav().subarray(0, 30), reason: /fmt chunk is cut short/ },
    { name: "no data chunk", wav: riffFile([parts().fmt]), reason: /no data chunk/ },
    { name: "data before fmt", wav: riffFile([parts().data, parts().fmt]), reason: /before the fmt/ },
    {
      name: "fmt too short",
      wav: riffFile([chunk("fmt ", Buffer.alloc(8)), parts().data]),
      reason: /shorter than 16/,
    },
    { name: "0 channels", wav: withFmt((fmt) => fmt.writeUInt16LE(0, 2)), reason: /0 channels/ },
    { name: "0 sample rate", wav: withFmt((fmt) => fmt.writeUInt32LE(0, 4)), reason: /0 samples per second/ },
    { name: "0 bits per sample", wav: withFmt((fmt) => fmt.writeUInt16LE(0, 14)), reason: /0 bits/ },
    { name: "an empty buffer", wav: Buffer.alloc(0), reason: /RIFF\/WAVE/ },
  ])("refuses a broken header: $name", ({ wav, reason }) => {
    const parsed = parseWavHeader(wav);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toMatch(reason);
  });

  it("gives compressed WAV codecs a duration from the byte rate", () => {
    // mu-law (tag 7): 8000 bytes per second, so 4000 bytes last half a second.
    const fmt = Buffer.alloc(16);
    fmt.writeUInt16LE(7, 0);
    fmt.writeUInt16LE(1, 2);
    fmt.writeUInt32LE(8000, 4);
    fmt.writeUInt32LE(8000, 8);
    fmt.writeUInt16LE(1, 12);
    fmt.writeUInt16LE(8, 14);
    const wav = riffFile([chunk("fmt ", fmt), chunk("data", Buffer.alloc(4000))]);
    expect(parseWavHeader(wav)).toMatchObject({
      ok: true,
      info: { formatTag: "other", durationSeconds: 0.5 },
    });
  });
});

describe("WAV header from a file", () => {
  it("agrees with the buffer parser", async () => {
    const wav = toneWav({ seconds: 1.5, channels: 2 });
    const path = await folder.write("tone.wav", wav);
    expect(await readWavInfo(path)).toEqual(parseWavHeader(wav));
  });

  it("walks past a large chunk before data without reading it", async () => {
    const { fmt, data } = parts();
    const path = await folder.write(
      "padded.wav",
      riffFile([fmt, chunk("JUNK", Buffer.alloc(300_001)), data]),
    );
    expect(await readWavInfo(path)).toMatchObject({
      ok: true,
      info: { dataOffset: 12 + 24 + 300_010 + 8, dataBytes: 32000 },
    });
  });

  it("clamps a streamed data size to the file", async () => {
    const { fmt, samples } = parts();
    const path = await folder.write("streamed.wav", riffFile([fmt, chunk("data", samples, 0xffffffff)]));
    expect(await readWavInfo(path)).toMatchObject({
      ok: true,
      info: { dataBytes: 32000, durationSeconds: 1 },
    });
  });

  it("reports a file that is not a WAV", async () => {
    const path = await folder.write("text.wav", Buffer.from("not a wav"));
    expect(await readWavInfo(path)).toEqual({ ok: false, reason: "not a RIFF/WAVE file" });
  });
});

describe("16-bit samples of a WAV", () => {
  it("returns the samples and layout of a 16-bit PCM WAV", () => {
    const wav = toneWav({ seconds: 0.2, channels: 2, sampleRate: 22050 });
    const { pcm, sampleRate, channels } = wavPcm16(wav);
    expect({ sampleRate, channels, bytes: pcm.length }).toEqual({
      sampleRate: 22050,
      channels: 2,
      bytes: 17640,
    });
    expect(pcm.equals(wav.subarray(44))).toBe(true);
  });

  it.each([
    { name: "24-bit", wav: toneWav({ bits: 24 }) },
    { name: "float", wav: toneWav({ float: true }) },
    { name: "not a WAV", wav: Buffer.from("ID3 something else") },
  ])("refuses $name with WavError", ({ wav }) => {
    expect(() => wavPcm16(wav)).toThrow(WavError);
  });

  it("handles an empty data chunk", () => {
    expect(wavPcm16(silenceWav(0)).pcm.length).toBe(0);
    expect(parseWavHeader(encodeWav(new Float64Array(0)))).toMatchObject({
      ok: true,
      info: { durationSeconds: 0 },
    });
  });
});

function withFmt(change: (fmt: Buffer) => void): Buffer {
  const { fmt, data } = parts();
  const copy = Buffer.from(fmt);
  change(copy.subarray(8));
  return riffFile([copy, data]);
}
