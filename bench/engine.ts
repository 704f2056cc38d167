import { type Child, startNode } from "./children.ts";

/** The fake engine, running in its own process. */
export interface StartedEngine {
  child: Child;
  url: string;
}

/** Starts bench/fake-engine-process.ts and waits for the url it prints. */
export async function startEngine(options: { cpu: number | undefined; cwd: string }): Promise<StartedEngine> {
  const child = startNode("fake-engine", ["bench/fake-engine-process.ts"], {
    cpu: options.cpu,
    cwd: options.cwd,
    env: process.env,
  });
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = "";
    const timer = setTimeout(
      () => reject(new Error(`the fake engine did not start:\n${child.output()}`)),
      30_000,
    );
    child.process.stdout?.on("data", (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      const line = buffered.split("\n").find((text) => text.startsWith("{"));
      if (!line) return;
      clearTimeout(timer);
      resolve((JSON.parse(line) as { url: string }).url);
    });
    void child.exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the fake engine exited (${code}):\n${child.output()}`));
    });
  });
  return { child, url };
}
