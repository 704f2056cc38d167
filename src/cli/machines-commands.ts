import type { MachinesList, MachineView } from "../engines/machines-view.ts";
import type { Command, CommandGroup } from "./command.ts";
import { fromRunningServer } from "./running-server.ts";

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
    const listMachines = await fromRunningServer(input, "listMachines", "machine health");
    const machines = await listMachines();
    return input.values.json === true ? machines : machinesTable(machines, Date.now());
  },
};

/** `zona machines` */
export const machinesGroup: CommandGroup = {
  name: "machines",
  summary: "machine health of the running server: state, last error, load, latency",
  commands: [list],
};

/** Said below the machines when none serves a chat model (a fresh installation). */
export const NO_CHAT_MODEL =
  "No machine serves a chat model: the web chat has none to offer and chat requests find no model.\n" +
  "Declare a chat model under models and a machine that serves it (docs/engines.md).\n";

/**
 * The machines as a table, then one line per machine that has an error to show, then a word when
 * no machine serves a chat model.
 */
export function machinesTable(list: MachinesList, now: number): string {
  const chat = list.data.some((machine) => machine.models.some((model) => model.kind === "chat"));
  const hint = chat ? "" : `\n${NO_CHAT_MODEL}`;
  if (list.data.length === 0) return `No machines are configured.\n${hint}`;
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
  const lines = [line(header), ...rows.map(line)];
  if (errors.length > 0) lines.push("", "Last errors:", ...errors);
  return `${lines.join("\n")}\n${hint}`;
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
