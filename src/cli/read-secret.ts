import { CliFailure } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";

/**
 * Reads a password from standard input: all of a pipe (one trailing newline dropped), or one line
 * typed at a terminal with echo off. Passwords never come from argv, where `ps` and shell history see them.
 */
export async function readSecret(io: Pick<CliIo, "stdin" | "stderr">, prompt: string): Promise<string> {
  const { stdin } = io;
  if (stdin.isTTY && stdin.setRawMode) {
    io.stderr.write(prompt);
    try {
      return await readTypedLine(stdin);
    } finally {
      io.stderr.write("\n");
    }
  }
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

function readTypedLine(stdin: CliIo["stdin"]): Promise<string> {
  return new Promise((resolve, reject) => {
    let typed = "";
    const finish = (error?: Error) => {
      stdin.removeListener("data", onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (data: Buffer | string) => {
      for (const char of data.toString()) {
        if (char === "\r" || char === "\n" || char === "\u0004") return finish();
        if (char === "\u0003") return finish(new CliFailure("cancelled"));
        if (char === "\u007f" || char === "\b") typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    stdin.setRawMode?.(true);
    stdin.resume();
    stdin.on("data", onData);
  });
}
