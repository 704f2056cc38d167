/**
 * The worker thread of the built-in speech engine: it runs the espeak-ng command line (WASM) once
 * per request, in a fresh instance, so one synthesis (~100 ms of CPU) never blocks the server's
 * event loop, and Emscripten's process-wide side effects (`process.exitCode` on a failure) stay
 * in this thread. Loaded by Node directly (type stripping), so only erasable TypeScript here.
 */
import { readFile } from "node:fs/promises";
import { parentPort } from "node:worker_threads";
import ESpeakNg from "espeak-ng";
import type { EspeakReply, EspeakRequest } from "./espeak-protocol.ts";

/** The part of the WebAssembly API used here (the project's type libraries do not declare it). */
interface WasmApi {
  compile(bytes: Uint8Array): Promise<object>;
  instantiate(module: object, imports: object): Promise<object>;
}

const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
let compiled: Promise<object> | undefined;

/** The WASM compiled once (18 MB, the voices' data included); each request instantiates it anew. */
function wasmModule(): Promise<object> {
  compiled ??= readFile(new URL("espeak-ng.wasm", import.meta.resolve("espeak-ng"))).then((bytes) =>
    wasm.compile(bytes),
  );
  return compiled;
}

/** `espeak-ng -w out.wav -v <voice> -f in.txt`: the text goes through a file, never the command line. */
async function synthesize(text: string, voice: string): Promise<Uint8Array> {
  const module = await wasmModule();
  const messages: string[] = [];
  const instance = await new Promise<Awaited<ReturnType<typeof ESpeakNg>>>((resolve, reject) => {
    ESpeakNg({
      arguments: ["-w", "out.wav", "-v", voice, "-f", "in.txt"],
      preRun: [(m) => m.FS.writeFile("in.txt", text)],
      print: () => {},
      printErr: (line) => messages.push(line),
      instantiateWasm: (imports, receive) => {
        wasm.instantiate(module, imports).then(receive, reject);
        return {};
      },
    }).then(resolve, reject);
  });
  try {
    return instance.FS.readFile("out.wav");
  } catch {
    throw new Error(messages[0] ?? "espeak-ng wrote no audio");
  }
}

const port = parentPort;
if (port === null) throw new Error("espeak-worker.ts runs as a worker thread");
port.on("message", (request: EspeakRequest) => {
  synthesize(request.text, request.voice).then(
    (wav) => {
      const reply: EspeakReply = { id: request.id, wav };
      port.postMessage(reply, [wav.buffer as ArrayBuffer]);
    },
    (error: unknown) => {
      const reply: EspeakReply = {
        id: request.id,
        error: error instanceof Error ? error.message : String(error),
      };
      port.postMessage(reply);
    },
  );
});
