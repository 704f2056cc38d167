import { resolve } from "node:path";
import { cliEnvironment, loadConfig } from "../config/load.ts";
import type { MachinesList, MachineView } from "../engines/machines-view.ts";
import { readDataDirOwner } from "../store/data-dir-lock.ts";
import { CliFailure } from "./cli-errors.ts";
import { type Command, type CommandGroup, type CommandInput, stringValue } from "./command.ts";

const NO_SERVER =
  "machine health is kept by the running Zona server, and none was found: pass --url (or set ZONA_URL) " +
  "with ZONA_ADMIN_TOKEN, or run this next to a server that holds the embedded database";

const list: Command = {
  name: "list",
  positionals: [],
  usage: "[--json]",
  summary:
    "every machine with its zone, models, state, last error, load and latency (from the running server)",
  details: [
    "--json   print the operator API's JSON answer instead of the table",
    "",
    "STATE is up; down (the last health probe went unanswered); circuit_open (failed requests opened",
    "its circuit breaker: requests skip it until the time shown); half_open (the next request tries it).",
    "P50/P99 are the latencies of its answers over the last 5 minutes. This needs a running server.",
  ],
  options: { json: { type: "boolean" } },
  async run(input) {
    if (!serverKnown(input)) throw new CliFailure(NO_SERVER);
    const client = await input.operator();
    if (!client.listMachines) throw new CliFailure(NO_SERVER);
    const machines = await client.listMachines();
    return input.values.json === true ? machines : machinesTable(machines, Date.now());
  },
};

/** `zona machines` */
export const machinesGroup: CommandGroup = {
  name: "machines",
  summary: "machine health of the running server: state, last error, load, latency",
  commands: [list],
};

/**
 * Whether the command will reach a server rather than open a database (which knows no machine
 * health): an explicit URL, or a live server recorded in the embedded data folder. With
 * PostgreSQL the command would go to the database, so a URL is needed.
 */
function serverKnown(input: CommandInput): boolean {
  if (stringValue(input.values, "url") !== undefined || cliEnvironment(input.io.env).url !== undefined)
    return true;
  const config = loadConfig(input.io.env, input.io.cwd);
  if (config.server.database_url) return false;
  return readDataDirOwner(resolve(input.io.cwd, config.server.data_dir)) !== undefined;
}

/** The machines as a table, then one line per machine that has an error to show. */
export function machinesTable(list: MachinesList, now: number): string {
  if (list.data.length === 0) return "No machines are configured.\n";
  const header = ["MACHINE", "ZONE", "PROTOCOL", "STATE", "IN FLIGHT", "P50 MS", "P99 MS", "MODELS"];
  const rows = list.data.map((machine) => [
    machine.name,
    machine.zone,
    machine.protocol,
    state(machine, now),
    `${machine.in_flight}/${machine.capacity}`,
    latency(machine.latency_ms.p50),
    latency(machine.latency_ms.p99),
    machine.models
      .map((model) => (model.upstream === model.id ? model.id : `${model.id} (${model.upstream})`))
      .join(", ") || "-",
  ]);
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => (row[i] ?? "").length)),
  );
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const errors = list.data
    .filter((machine) => machine.last_error !== null)
    .map((machine) => `  ${machine.name}: ${lastError(machine, now)}`);
  return [
    line(header),
    ...rows.map(line),
    ...(errors.length > 0 ? ["", "Last errors:", ...errors] : []),
    "",
  ].join("\n");
}

function state(machine: MachineView, now: number): string {
  if (machine.state === "circuit_open" && machine.until !== null) {
    return `circuit_open until ${machine.until} (${ago(Date.parse(machine.until), now)})`;
  }
  return machine.state;
}

function lastError(machine: MachineView, now: number): string {
  const error = machine.last_error;
  if (error === null) return "";
  const what = error.status !== null ? `${error.kind} ${error.status}` : error.kind;
  return `${error.at} (${ago(Date.parse(error.at), now)}), ${error.source}, ${what}: ${error.message}`;
}

function latency(ms: number | null): string {
  return ms === null ? "-" : String(ms);
}

/** "12 s ago", "in 4 s" */
function ago(at: number, now: number): string {
  const seconds = Math.round((now - at) / 1000);
  const amount = Math.abs(seconds);
  const text =
    amount < 120
      ? `${amount} s`
      : amount < 7200
        ? `${Math.round(amount / 60)} min`
        : `${Math.round(amount / 3600)} h`;
  return seconds >= 0 ? `${text} ago` : `in ${text}`;
}
