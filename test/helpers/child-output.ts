import type { ChildProcess } from "node:child_process";

/** Gathers what a child process writes to stdout and stderr, and waits for a text in it. */
export function childOutput(child: ChildProcess) {
  let output = "";
  const gather = (chunk: Buffer | string) => {
    output += chunk;
  };
  child.stdout?.on("data", gather);
  child.stderr?.on("data", gather);
  return {
    text: () => output,
    /** Resolves once `text` was written; throws with the output when the child exits first or time runs out. */
    async waitFor(text: string, timeoutMs = 45_000): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      while (!output.includes(text)) {
        if (Date.now() > deadline || child.exitCode !== null) {
          throw new Error(`"${text}" did not come:\n${output}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return output;
    },
  };
}
