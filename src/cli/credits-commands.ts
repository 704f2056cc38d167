import { type Command, type CommandGroup, numeric, positional, stringValue } from "./command.ts";
import type { OperatorClient } from "./operator-client.ts";
import { resolveAccount } from "./resolve-account.ts";

const show: Command = {
  name: "show",
  positionals: ["ACCOUNT"],
  usage: "",
  summary: "show an account's prepaid balance",
  details: ["ACCOUNT   an account id or the account's email address"],
  options: {},
  async run(input) {
    const client = await input.operator();
    return client.getCredits(await resolveAccount(client, positional(input, 0)));
  },
};

/** `set` and `add` differ only in the field and the action. */
function change(
  name: "set" | "add",
  summary: string,
  field: "balance" | "amount",
  act: (client: OperatorClient, id: string, body: Record<string, unknown>) => Promise<unknown>,
): Command {
  return {
    name,
    positionals: ["ACCOUNT", "AMOUNT"],
    usage: "[--note T]",
    summary,
    details: [
      "ACCOUNT    an account id or the account's email address",
      name === "set"
        ? "AMOUNT     the new balance, in the installation's currency"
        : "AMOUNT     what to add, in the installation's currency; negative takes away (never below zero)",
      "--note T   a note kept with the change",
    ],
    options: { note: { type: "string" } },
    async run(input) {
      const note = stringValue(input.values, "note");
      const client = await input.operator();
      const id = await resolveAccount(client, positional(input, 0));
      return act(client, id, {
        [field]: numeric(positional(input, 1)),
        ...(note !== undefined ? { note } : {}),
      });
    },
  };
}

/** `zona credits ...` */
export const creditsGroup: CommandGroup = {
  name: "credits",
  summary: "show, set and add prepaid credits",
  commands: [
    show,
    change("set", "set an account's prepaid balance", "balance", (client, id, body) =>
      client.setCredits(id, body),
    ),
    change("add", "add to (or take from) an account's prepaid balance", "amount", (client, id, body) =>
      client.addCredits(id, body),
    ),
  ],
};
