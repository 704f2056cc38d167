import { ConfigError, cliEnvironment, loadConfig } from "../config/load.ts";
import { ApiError } from "../errors/catalogue.ts";
import { accountsGroup } from "./accounts-commands.ts";
import { CliFailure, UsageError } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import type { Command, CommandGroup } from "./command.ts";
import { connectOperator } from "./connect-operator.ts";
import { creditsGroup } from "./credits-commands.ts";
import { commandHelp, groupHelp, topHelp } from "./help-text.ts";
import { knowledgeBasesGroup } from "./kb-commands.ts";
import { keysGroup } from "./keys-commands.ts";
import { machinesGroup } from "./machines-commands.ts";
import { mailGroup } from "./mail-commands.ts";
import { modelsGroup } from "./models-commands.ts";
import type { OperatorConnection } from "./operator-client.ts";
import { parseCommandLine } from "./parse-command-line.ts";
import { reloadGroup } from "./reload-commands.ts";
import { usageGroup } from "./usage-commands.ts";

/** Every command group of `zona`. */
export const GROUPS: CommandGroup[] = [
  accountsGroup,
  keysGroup,
  creditsGroup,
  usageGroup,
  modelsGroup,
  knowledgeBasesGroup,
  mailGroup,
  machinesGroup,
  reloadGroup,
];

/** Exit codes of the command. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

const GLOBAL_OPTIONS = { url: { type: "string" }, help: { type: "boolean", short: "h" } } as const;

/** Runs `zona ARGV...` and returns the exit code; nothing here exits the process. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await run(argv, io);
  } catch (error) {
    return report(error, io);
  }
}

async function run(argv: string[], io: CliIo): Promise<number> {
  const top = leadingGlobals(argv);
  const [groupName, ...afterGroup] = top.rest;
  if (groupName === undefined || groupName === "help") {
    return help(io, topHelp(GROUPS), top.help || groupName === "help");
  }
  const group = GROUPS.find((candidate) => candidate.name === groupName);
  if (!group) throw new UsageError(`unknown command group '${groupName}'`);

  // A group of one command runs it without its name: `zona machines` is `zona machines list`.
  const lone = group.commands.length === 1 ? group.commands[0] : undefined;
  const second = leadingGlobals(
    lone && afterGroup[0] !== lone.name ? [lone.name, ...afterGroup] : afterGroup,
  );
  const [commandName, ...args] = second.rest;
  if (commandName === undefined) return help(io, groupHelp(group), top.help || second.help);
  const command = group.commands.find((candidate) => candidate.name === commandName);
  if (!command)
    throw new UsageError(`unknown command 'zona ${group.name} ${commandName}'`, `zona ${group.name}`);
  const helpFor = `zona ${group.name} ${command.name}`;

  // Global options may come anywhere; the ones before the group or command are passed on.
  const leading = [...top.passOn, ...second.passOn];
  const { values, positionals } = parseCommandLine(
    [...leading, ...args],
    { ...command.options, ...GLOBAL_OPTIONS },
    helpFor,
  );
  if (values.help || top.help || second.help) return help(io, commandHelp(group, command), true);
  checkPositionals(command, positionals, helpFor);

  const config = loadConfig(io.env, io.cwd);
  const url = typeof values.url === "string" ? values.url : cliEnvironment(io.env).url;
  let connection: OperatorConnection | undefined;
  try {
    const result = await command.run({
      values,
      positionals,
      io,
      operator: async () => {
        connection ??= await connectOperator({ config, cwd: io.cwd, ...(url !== undefined ? { url } : {}) });
        return connection.client;
      },
    });
    // A command that prints a table returns it as text.
    io.stdout.write(typeof result === "string" ? result : `${JSON.stringify(result, null, 2)}\n`);
    return EXIT.ok;
  } finally {
    await connection?.close();
  }
}

/** Splits off `--url X` and `-h` that come before the next word. */
function leadingGlobals(args: string[]): { help: boolean; passOn: string[]; rest: string[] } {
  let help = false;
  const passOn: string[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "-h" || arg === "--help") help = true;
    else if (arg === "--url") passOn.push(arg, args[++i] ?? "");
    else if (arg.startsWith("--url=")) passOn.push(arg);
    else if (arg.startsWith("-")) throw new UsageError(`unknown option '${arg.split("=", 1)[0]}'`);
    else break;
  }
  return { help, passOn, rest: args.slice(i) };
}

function checkPositionals(command: Command, positionals: string[], helpFor: string): void {
  const expected = command.positionals;
  const most = expected.length + (command.optionalPositionals?.length ?? 0);
  if (positionals.length >= expected.length && positionals.length <= most) return;
  if (positionals.length < expected.length) {
    throw new UsageError(`missing ${expected.slice(positionals.length).join(" ")}`, helpFor);
  }
  const extra = positionals.slice(most).join(" ");
  throw new UsageError(`unexpected argument${positionals.length - most > 1 ? "s" : ""}: ${extra}`, helpFor);
}

/** Help asked for goes to stdout with success; help shown because something was missing is a usage error. */
function help(io: CliIo, text: string, asked: boolean): number {
  if (asked) {
    io.stdout.write(text);
    return EXIT.ok;
  }
  io.stderr.write(text);
  return EXIT.usage;
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof UsageError) {
    io.stderr.write(`zona: ${error.message}\nRun '${error.helpFor} --help' for usage.\n`);
    return EXIT.usage;
  }
  if (error instanceof ApiError) {
    io.stderr.write(`zona: ${error.message} (${error.code ?? error.type})\n`);
    return EXIT.failed;
  }
  if (error instanceof CliFailure) {
    io.stderr.write(`zona: ${error.message}${error.code ? ` (${error.code})` : ""}\n`);
    return EXIT.failed;
  }
  if (error instanceof ConfigError) {
    io.stderr.write(`zona: ${error.message}\n`);
    return EXIT.failed;
  }
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  io.stderr.write(`zona: unexpected failure: ${detail}\n`);
  return EXIT.failed;
}
