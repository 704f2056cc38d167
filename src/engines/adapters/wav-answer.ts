import { UpstreamError } from "../types.ts";

/** Whether bytes start like a WAV file (a RIFF container of type WAVE, with room for a chunk). */
export function isRiffWave(bytes: Uint8Array): boolean {
  if (bytes.length < 20) return false;
  const ascii = (offset: number) => String.fromCharCode(...bytes.subarray(offset, offset + 4));
  return ascii(0) === "RIFF" && ascii(8) === "WAVE";
}

/** The bytes when they are a WAV file, a `protocol` failure otherwise (an error page, a cut answer). */
export function expectWav(bytes: Buffer, who: string): Buffer {
  if (!isRiffWave(bytes)) throw new UpstreamError("protocol", `${who} sent audio that is not a WAV file`);
  return bytes;
}
