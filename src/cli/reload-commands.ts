import type { Command, CommandGroup } from "./command.ts";
import { fromRunningServer } from "./running-server.ts";

const now: Command = {
  name: "now",
  positionals: [],
  usage: "",
  summary: "make the running server read its configuration again, like SIGHUP",
  details: [
    "Machines, models, prices, zones and limits hold for the server's next requests; requests in",
    "flight finish on the old ones. A bad file changes nothing: the command fails with its reasons.",
    "Options read only at start (the server section, app, billing, ...) are named and wait for a restart.",
  ],
  options: {},
  async run(input) {
    const reload = await fromRunningServer(input, "reload", "reloading the configuration");
    const answer = await reload();
    const lines = [
      answer.changes.length ? `reloaded: ${answer.changes.join(", ")}` : "reloaded: nothing changed",
    ];
    if (answer.restart_required.length) {
      lines.push(`only after a restart: ${answer.restart_required.join(", ")}`);
    }
    return `${lines.join("\n")}\n`;
  },
};

/** `zona reload` */
export const reloadGroup: CommandGroup = {
  name: "reload",
  summary: "make the running server read its configuration again (like SIGHUP)",
  commands: [now],
};
