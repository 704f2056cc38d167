/** How a test tone is made. */
export interface ToneOptions {
  seconds: number;
  /** Samples per second (default 22050, Piper's medium voices). */
  sampleRate?: number;
  /** Hz (default 440). */
  frequency?: number;
  /** 0 to 1 of full scale (default 0.3; 0 gives digital silence). */
  amplitude?: number;
}

/** A 16-bit PCM mono WAV file of a sine tone: a real, small audio file for fakes and uploads. */
export function toneWav(options: ToneOptions): Buffer {
  const sampleRate = options.sampleRate ?? 22_050;
  const frequency = options.frequency ?? 440;
  const amplitude = options.amplitude ?? 0.3;
  const samples = Math.max(0, Math.round(options.seconds * sampleRate));
  const wav = Buffer.alloc(44 + samples * 2);
  wav.write("RIFF", 0, "ascii");
  wav.writeUInt32LE(36 + samples * 2, 4);
  wav.write("WAVE", 8, "ascii");
  wav.write("fmt ", 12, "ascii");
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(sampleRate, 24);
  wav.writeUInt32LE(sampleRate * 2, 28);
  wav.writeUInt16LE(2, 32);
  wav.writeUInt16LE(16, 34);
  wav.write("data", 36, "ascii");
  wav.writeUInt32LE(samples * 2, 40);
  for (let i = 0; i < samples; i++) {
    const value = Math.sin((2 * Math.PI * frequency * i) / sampleRate) * amplitude * 32_767;
    wav.writeInt16LE(Math.round(value), 44 + i * 2);
  }
  return wav;
}

/** The format of a 16-bit PCM WAV file's `fmt ` chunk and the length of its `data`, or undefined when it is not one. */
export function wavInfo(
  wav: Buffer,
): { channels: number; sampleRate: number; bitsPerSample: number; dataBytes: number } | undefined {
  if (wav.length < 12 || wav.toString("ascii", 0, 4) !== "RIFF" || wav.toString("ascii", 8, 12) !== "WAVE") {
    return undefined;
  }
  let offset = 12;
  let format: { channels: number; sampleRate: number; bitsPerSample: number } | undefined;
  while (offset + 8 <= wav.length) {
    const id = wav.toString("ascii", offset, offset + 4);
    const size = wav.readUInt32LE(offset + 4);
    if (id === "fmt " && offset + 24 <= wav.length) {
      format = {
        channels: wav.readUInt16LE(offset + 10),
        sampleRate: wav.readUInt32LE(offset + 12),
        bitsPerSample: wav.readUInt16LE(offset + 22),
      };
    }
    if (id === "data") {
      return format ? { ...format, dataBytes: Math.min(size, wav.length - offset - 8) } : undefined;
    }
    offset += 8 + size + (size % 2);
  }
  return undefined;
}
