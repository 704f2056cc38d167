import { type Listening, startListener } from "./children.ts";

/** Starts bench/fake-engine-process.ts in its own process and waits for the url it prints. */
export function startEngine(options: { cpu: number | undefined; cwd: string }): Promise<Listening> {
  return startListener("fake-engine", ["bench/fake-engine-process.ts"], options);
}
