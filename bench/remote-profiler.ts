/**
 * What a profile samples: where CPU time goes, where bytes are allocated (`heap`: kept or not;
 * `live`: still in the heap when the run ends, which counts what was promoted and not yet collected),
 * or each garbage collection (V8's GCProfiler: its kind, its time on the main thread, the heap's
 * spaces before and after it).
 */
export type ProfileKind = "cpu" | "heap" | "live" | "gc";

// Run inside the profiled process; the profiler is kept on globalThis between start and stop.
const START_GC = `globalThis.__benchGc = new (process.getBuiltinModule("node:v8").GCProfiler)();
globalThis.__benchGc.start();`;
const STOP_GC = "JSON.stringify(globalThis.__benchGc.stop())";

/**
 * Takes a V8 CPU profile, or a sampling allocation profile, of another Node process over its
 * inspector (started with `--inspect=127.0.0.1:0`), so that the profile covers exactly one load run
 * and not the start-up.
 */
export class RemoteProfiler {
  private readonly socket: WebSocket;
  private readonly kind: ProfileKind;
  private serial = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (e: Error) => void }
  >();

  private constructor(socket: WebSocket, kind: ProfileKind) {
    this.socket = socket;
    this.kind = kind;
    socket.addEventListener("message", (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: unknown };
      if (message.id === undefined) return;
      const waiter = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.error) waiter?.reject(new Error(JSON.stringify(message.error)));
      else waiter?.resolve(message.result);
    });
  }

  /** Connects to the inspector whose address the process printed ("Debugger listening on ws://..."). */
  static async connect(output: string, kind: ProfileKind = "cpu"): Promise<RemoteProfiler> {
    const url = /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
    if (!url) throw new Error("the process did not print its inspector address");
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => resolve(), { once: true });
      socket.addEventListener("error", () => reject(new Error(`could not connect to ${url}`)), {
        once: true,
      });
    });
    const profiler = new RemoteProfiler(socket, kind);
    if (kind !== "cpu") return profiler;
    await profiler.call("Profiler.enable");
    await profiler.call("Profiler.setSamplingInterval", { interval: 500 });
    return profiler;
  }

  /** The file name ending of this kind's profiles (what DevTools opens). */
  get extension(): string {
    return { cpu: "cpuprofile", heap: "heapprofile", live: "live.heapprofile", gc: "gcprofile.json" }[
      this.kind
    ];
  }

  async start(): Promise<void> {
    if (this.kind === "cpu") await this.call("Profiler.start");
    else if (this.kind === "gc") await this.call("Runtime.evaluate", { expression: START_GC });
    // `heap`: every allocation counts, also what the next scavenge frees (allocation is what GC costs).
    else
      await this.call("HeapProfiler.startSampling", {
        samplingInterval: 16_384,
        includeObjectsCollectedByMajorGC: this.kind === "heap",
        includeObjectsCollectedByMinorGC: this.kind === "heap",
      });
  }

  /** Stops sampling and returns the profile (the JSON of a .cpuprofile or .heapprofile file). */
  async stop(): Promise<unknown> {
    if (this.kind === "gc") {
      const result = (await this.call("Runtime.evaluate", { expression: STOP_GC })) as {
        result: { value: string };
      };
      return JSON.parse(result.result.value);
    }
    const method = this.kind === "cpu" ? "Profiler.stop" : "HeapProfiler.stopSampling";
    const result = (await this.call(method)) as { profile: unknown };
    return result.profile;
  }

  close(): void {
    this.socket.close();
  }

  private call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = ++this.serial;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.socket.send(JSON.stringify({ id, method, params }));
    });
  }
}
