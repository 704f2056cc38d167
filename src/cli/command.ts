import type { ParseArgsOptionsConfig } from "node:util";
import { UsageError } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import type { OperatorClient } from "./operator-client.ts";
import type { ParsedCommandLine } from "./parse-command-line.ts";

/** What a command gets when it runs. */
export interface CommandInput {
  values: ParsedCommandLine["values"];
  /** As many as the command names in `positionals`, then at most its `optionalPositionals`. */
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
  /** Positional arguments that may be left out, after the required ones (shown as `[NAME]`). */
  optionalPositionals?: string[];
  /** The arguments' part of the synopsis when `[NAME]` would mislead (one of two forms is needed). */
  synopsisArguments?: string;
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

/**
 * The account a command is about, given as its positional ACCOUNT or as `--account ACCOUNT` (the
 * same forms for `keys create` and `keys list`); undefined when neither was given. Both, differing,
 * is a usage error.
 */
export function accountArgument(input: CommandInput, helpFor: string): string | undefined {
  const named = stringValue(input.values, "account");
  const placed = input.positionals[0];
  if (named !== undefined && placed !== undefined && named !== placed) {
    throw new UsageError("give the account once: as ACCOUNT or as --account ACCOUNT", helpFor);
  }
  return placed ?? named;
}
