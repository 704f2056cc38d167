import type { Command, CommandGroup } from "./command.ts";

const GLOBAL_OPTIONS = [
  "Options for every command:",
  "  --url URL    call the operator API of the Zona server at URL (default: ZONA_URL)",
  "  -h, --help   show help",
];

const CONNECTION = [
  "How zona reaches the data:",
  "  - with --url or ZONA_URL: through that server's operator API (/admin/v1), with ZONA_ADMIN_TOKEN;",
  "  - else, when a running server holds the embedded database (ZONA_DATA_DIR): through its operator",
  "    API at the address it recorded, with ZONA_ADMIN_TOKEN when set, else with the credential the",
  "    server wrote at its start into ZONA_DATA_DIR/operator/local-credential (readable by its user only);",
  "  - else it opens the database itself (DATABASE_URL, or the embedded one in ZONA_DATA_DIR).",
  "Configuration comes from ZONA_CONFIG (or ./zona.yaml) and the environment, as for the server.",
];

const EXIT_CODES = "Exit codes: 0 done, 1 the operation failed (message on stderr), 2 wrong usage.";

/** `zona --help` */
export function topHelp(groups: CommandGroup[]): string {
  return lines([
    "zona: operate a Zona installation (accounts, API keys, credits, usage).",
    "",
    "Usage: zona <group> <command> [arguments] [options]",
    "",
    "Groups:",
    ...table(groups.map((group) => [group.name, group.summary])),
    "",
    "Every command prints the operator API's JSON answer ('zona machines' prints a table and",
    "'zona mail list' the mails as text; --json for JSON).",
    "Run 'zona <group> --help' for its commands; a group of one command runs it without its name.",
    "",
    ...GLOBAL_OPTIONS,
    "",
    ...CONNECTION,
    "",
    EXIT_CODES,
  ]);
}

/** `zona GROUP --help` */
export function groupHelp(group: CommandGroup): string {
  return lines([
    `zona ${group.name}: ${group.summary}.`,
    "",
    `Usage: zona ${group.name} <command> [arguments] [options]`,
    "",
    "Commands:",
    ...group.commands.flatMap((command) => [`  ${synopsis(group, command)}`, `      ${command.summary}`]),
    "",
    `Run 'zona ${group.name} <command> --help' for details.`,
    "",
    ...GLOBAL_OPTIONS,
  ]);
}

/** `zona GROUP COMMAND --help` */
export function commandHelp(group: CommandGroup, command: Command): string {
  return lines([
    `zona ${group.name} ${command.name}: ${command.summary}.`,
    "",
    `Usage: ${synopsis(group, command)}`,
    "",
    ...command.details.map((line) => `  ${line}`),
    "",
    ...GLOBAL_OPTIONS,
    "",
    EXIT_CODES,
  ]);
}

/** "zona keys create ACCOUNT --name N ..." */
export function synopsis(group: CommandGroup, command: Command): string {
  const optional = (command.optionalPositionals ?? []).map((name) => `[${name}]`);
  const args = command.synopsisArguments ?? [...command.positionals, ...optional].join(" ");
  return ["zona", group.name, command.name, args, command.usage].filter(Boolean).join(" ");
}

function table(rows: string[][]): string[] {
  const width = Math.max(...rows.map((row) => (row[0] ?? "").length));
  return rows.map(([left = "", right = ""]) => `  ${left.padEnd(width)}   ${right}`);
}

function lines(text: string[]): string {
  return `${text.join("\n")}\n`;
}
