import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { UsageError } from "./cli-errors.ts";

/** Parsed options (by long name) and positionals of one command. */
export interface ParsedCommandLine {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

// "-5" or "-0.25" is an amount (credits add ACCOUNT -5), not a cluster of short options.
const NEGATIVE_NUMBER = /^-(\d+(\.\d*)?|\.\d+)$/;

/**
 * node:util parseArgs, strict, with two additions: negative numbers are positionals, and the value
 * of a string option may itself start with a dash (`--monthly-limit -1` reaches validation).
 */
export function parseCommandLine(
  args: string[],
  options: ParseArgsOptionsConfig,
  helpFor: string,
): ParsedCommandLine {
  const ordered: string[] = [];
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? "";
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-" || NEGATIVE_NUMBER.test(arg)) {
      positionals.push(arg);
      continue;
    }
    const name = arg.startsWith("--") ? arg.slice(2) : undefined;
    const next = args[i + 1];
    if (name !== undefined && options[name]?.type === "string") {
      if (next === undefined || next.startsWith("--")) {
        throw new UsageError(`option '--${name}' needs a value`, helpFor);
      }
      ordered.push(`--${name}=${next}`);
      i++;
      continue;
    }
    ordered.push(arg);
  }
  try {
    const parsed = parseArgs({
      args: [...ordered, "--", ...positionals],
      options,
      allowPositionals: true,
      strict: true,
    });
    return { values: parsed.values as ParsedCommandLine["values"], positionals: parsed.positionals };
  } catch (error) {
    throw new UsageError(describe(error), helpFor);
  }
}

// parseArgs' own messages suggest `--` tricks; the first sentence is what matters, and it never shows a value.
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const first = message.split(/\.\s/, 1)[0] ?? message;
  const described = first.replace(/^Unknown option/, "unknown option").replace(/\.$/, "");
  return described === "unknown option '--password'"
    ? `${described}: passwords are never taken from the command line; pipe one in with --password-stdin`
    : described;
}
