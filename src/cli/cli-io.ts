/** Where the `zona` command reads and writes: the real process in `main.ts`, buffers in tests. */
export interface CliIo {
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?(mode: boolean): unknown };
  env: Record<string, string | undefined>;
  cwd: string;
}
