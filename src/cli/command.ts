import type { ParseArgsOptionsConfig } from "node:util";
import type { CliIo } from "./cli-io.ts";
import type { OperatorClient } from "./operator-client.ts";
import type { ParsedCommandLine } from "./parse-command-line.ts";

/** What a command gets when it runs. */
export interface CommandInput {
  values: ParsedCommandLine["values"];
  /** Exactly as many as the command names in `positionals`. */
  positionals: string[];
  io: CliIo;
  /** Connects on first use, so that a command can read stdin before it takes the database. */
  operator(): Promise<OperatorClient>;
}

/** One `zona GROUP NAME` command; what `run` returns is printed as JSON. */
export interface Command {
  name: string;
  /** Positional arguments, all required, e.g. ["ACCOUNT", "AMOUNT"]. */
  positionals: string[];
  /** The options part of the usage line, e.g. "--name N [--zones a,b]". */
  usage: string;
  summary: string;
  /** Lines describing arguments and options. */
  details: string[];
  options: ParseArgsOptionsConfig;
  run(input: CommandInput): Promise<unknown>;
}

/** A `zona GROUP` family of commands. */
export interface CommandGroup {
  name: string;
  summary: string;
  commands: Command[];
}

/** A string option's value, if given. */
export function stringValue(values: CommandInput["values"], name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

/** A number when the text is one; otherwise the text, so that the operator's validation names the field. */
export function numeric(text: string): number | string {
  const value = Number(text);
  return text.trim() !== "" && Number.isFinite(value) ? value : text;
}

/** The positional at `index`; the runner has checked the count. */
export function positional(input: CommandInput, index: number): string {
  return input.positionals[index] ?? "";
}
