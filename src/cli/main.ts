import "../require-node.ts";
import { runCli } from "./run-cli.ts";

/** The `zona` command's process entry: the one place that hands the real process to the command. */
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
});
