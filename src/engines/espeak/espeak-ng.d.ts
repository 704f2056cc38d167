// The espeak-ng package (the espeak-ng command line compiled to WASM by Emscripten) ships no types:
// this is the part of its module factory the built-in speech engine uses.
declare module "espeak-ng" {
  /** The in-memory file system of one instance. */
  interface EspeakFs {
    writeFile(path: string, data: string | Uint8Array): void;
    readFile(path: string): Uint8Array;
  }

  /** One instance: the command has run when the factory's promise resolves. */
  interface EspeakInstance {
    FS: EspeakFs;
  }

  /** What the factory accepts (Emscripten's Module object). */
  interface EspeakOptions {
    /** The command line, without the program name. */
    arguments?: string[];
    preRun?: Array<(instance: EspeakInstance) => void>;
    print?: (line: string) => void;
    printErr?: (line: string) => void;
    /** Instantiates the WASM module (to reuse one compilation); returns `{}` and calls `receive` later. */
    instantiateWasm?: (imports: object, receive: (instance: object) => void) => Record<string, never>;
  }

  /** Runs `espeak-ng <arguments>` in a fresh instance. */
  export default function ESpeakNg(options?: EspeakOptions): Promise<EspeakInstance>;
}
