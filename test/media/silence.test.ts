import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SILENCE_MAX_BYTES, scanWavSilence } from "../../src/media/silence.ts";
import { buildWav, readWavInfo, wavPcm16 } from "../../src/media/wav.ts";

import {
  noiseWav,
  QUIET_LEAD_BYTES,
  quietThenLoudWav,
  silenceWav,
  tempFolder,
  toneWav,
} from "./wav-fixtures.ts";

let folder: Awaited<ReturnType<typeof tempFolder>>;
beforeAll(async () => {
  folder = await tempFolder();
});
afterAll(async () => {
  await folder.cleanup();
});

async function scan(wav: Buffer) {
  const path = await folder.write(`scan-${Math.random().toString(36).slice(2)}.wav`, wav);
  const header = await readWavInfo(path);
  if (!header.ok) throw new Error(header.reason);
  return { info: header.info, result: await scanWavSilence(path, header.info) };
}

describe("Silent audio", () => {
  it.each([
    {
      rule: "2: a 440 Hz tone at -40 dBFS goes to the model",
      wav: () => toneWav({ dbfs: -40, seconds: 3 }),
      silent: false,
    },
    {
      rule: "5: noise near -59 dBFS is silent",
      wav: () => noiseWav({ dbfs: -59, seconds: 3 }),
      silent: true,
    },
    {
      rule: "5: noise near -48 dBFS goes to the model",
      wav: () => noiseWav({ dbfs: -48, seconds: 3 }),
      silent: false,
    },
    {
      rule: "5: stereo 44.1 kHz noise near -59 dBFS is silent",
      wav: () => noiseWav({ dbfs: -59, seconds: 2, channels: 2, sampleRate: 44100, seed: 7 }),
      silent: true,
    },
    {
      rule: "2: a stereo tone at -40 dBFS goes to the model",
      wav: () => toneWav({ dbfs: -40, channels: 2, sampleRate: 48000 }),
      silent: false,
    },
    { rule: "2: digital silence is silent", wav: () => silenceWav(5), silent: true },
    {
      rule: "2: a tone at -52 dBFS is under the threshold",
      wav: () => toneWav({ dbfs: -52, seconds: 2 }),
      silent: true,
    },
  ])("Silent audio rule $rule", async ({ wav, silent }) => {
    const { result } = await scan(wav());
    expect(result).toMatchObject({ measured: true, silent });
  });

  it("Silent audio rule 5: the measured level of noise is the level it was made at", async () => {
    const quiet = (await scan(noiseWav({ dbfs: -59, seconds: 2 }))).result;
    expect(quiet.loudestDbfs).toBeGreaterThan(-60);
    expect(quiet.loudestDbfs).toBeLessThan(-57.5);
    const loud = (await scan(noiseWav({ dbfs: -48, seconds: 2 }))).result;
    expect(loud.loudestDbfs).toBeGreaterThan(-50);
  });

  it("Silent audio rule 2: reading stops at the first loud stretch", async () => {
    const { result } = await scan(toneWav({ dbfs: -20, seconds: 10 }));
    expect(result).toMatchObject({ silent: false, bytesScanned: 640 }); // one 20 ms stretch at 16 kHz mono
    const pcm = Buffer.concat([wavPcm16(silenceWav(1)).pcm, wavPcm16(toneWav({ dbfs: -20 })).pcm]);
    const late = await scan(buildWav(pcm, { sampleRate: 16000, channels: 1 }));
    expect(late.result.bytesScanned).toBe(32_000 + 640);
  });

  it("Silent audio rule 2: all of a WAV of exactly 2,000,000 bytes of samples is read", async () => {
    const { info, result } = await scan(silenceWav(62.5)); // 16 kHz mono 16-bit: 32,000 bytes a second
    expect(info.dataBytes).toBe(SILENCE_MAX_BYTES);
    expect(result).toEqual({
      measured: true,
      silent: true,
      bytesScanned: SILENCE_MAX_BYTES,
      loudestDbfs: Number.NEGATIVE_INFINITY,
    });
  });

  it("Silent audio rule 3: a longer WAV whose first 2,000,000 bytes are quiet goes to the model", async () => {
    const { info, result } = await scan(quietThenLoudWav());
    expect(info.dataBytes).toBeGreaterThan(QUIET_LEAD_BYTES);
    expect(result).toMatchObject({ measured: true, silent: false, bytesScanned: 2_000_000 });
  });

  it("Silent audio rule 3: a longer WAV that is silent throughout still goes to the model", async () => {
    const { result } = await scan(silenceWav(70));
    expect(result).toMatchObject({ measured: true, silent: false, bytesScanned: 2_000_000 });
  });

  it.each([
    { name: "24-bit PCM", wav: () => silenceWav(1, { bits: 24 }) },
    { name: "8-bit PCM", wav: () => silenceWav(1, { bits: 8 }) },
    { name: "32-bit float", wav: () => silenceWav(1, { float: true }) },
    { name: "24-bit extensible", wav: () => silenceWav(1, { bits: 24, extensible: true }) },
  ])("Silent audio rule 1: $name is not measured and goes to the model", async ({ wav }) => {
    const { result } = await scan(wav());
    expect(result).toMatchObject({ measured: false, silent: false, bytesScanned: 0 });
  });

  it("Silent audio rule 1: 16-bit PCM in WAVE_FORMAT_EXTENSIBLE is measured", async () => {
    const { result } = await scan(silenceWav(1, { extensible: true }));
    expect(result).toMatchObject({ measured: true, silent: true });
  });
});
