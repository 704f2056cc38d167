/**
 * Takes a V8 CPU profile of another Node process over its inspector (started with
 * `--inspect=127.0.0.1:0`), so that the profile covers exactly one load run and not the start-up.
 */
export class RemoteProfiler {
  private readonly socket: WebSocket;
  private serial = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (e: Error) => void }
  >();

  private constructor(socket: WebSocket) {
    this.socket = socket;
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
  static async connect(output: string): Promise<RemoteProfiler> {
    const url = /Debugger listening on (ws:\/\/\S+)/.exec(output)?.[1];
    if (!url) throw new Error("the process did not print its inspector address");
    const socket = new WebSocket(url);
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener("open", () => resolve(), { once: true });
      socket.addEventListener("error", () => reject(new Error(`could not connect to ${url}`)), {
        once: true,
      });
    });
    const profiler = new RemoteProfiler(socket);
    await profiler.call("Profiler.enable");
    await profiler.call("Profiler.setSamplingInterval", { interval: 500 });
    return profiler;
  }

  async start(): Promise<void> {
    await this.call("Profiler.start");
  }

  /** Stops sampling and returns the profile (the JSON of a .cpuprofile file). */
  async stop(): Promise<unknown> {
    const result = (await this.call("Profiler.stop")) as { profile: unknown };
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
