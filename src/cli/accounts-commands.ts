import { LANGUAGES } from "../config/schema.ts";
import { type Command, type CommandGroup, positional, stringValue } from "./command.ts";
import type { OperatorClient } from "./operator-client.ts";
import { readSecret } from "./read-secret.ts";
import { resolveAccount } from "./resolve-account.ts";

const ACCOUNT = "ACCOUNT is an account id or the account's email address.";

const create: Command = {
  name: "create",
  positionals: [],
  usage: `--email E [--password-stdin] [--language ${LANGUAGES.join("|")}] [--verified]`,
  summary: "open an account",
  details: [
    "--email E          the account's email address (required)",
    "--password-stdin   read the password from standard input (a pipe, or typed with echo off);",
    "                   it is never taken from the command line",
    `--language L       one of ${LANGUAGES.join(", ")} (default: the installation's language)`,
    "--verified         mark the email address as verified",
  ],
  options: {
    email: { type: "string" },
    "password-stdin": { type: "boolean" },
    language: { type: "string" },
    verified: { type: "boolean" },
  },
  async run({ values, io, operator }) {
    const password = values["password-stdin"] ? await readSecret(io, "Password: ") : undefined;
    const language = stringValue(values, "language");
    return (await operator()).createAccount({
      email: stringValue(values, "email"),
      ...(password !== undefined ? { password } : {}),
      ...(language !== undefined ? { language } : {}),
      ...(values.verified ? { email_verified: true } : {}),
    });
  },
};

const list: Command = {
  name: "list",
  positionals: [],
  usage: "[--email E] [--limit N] [--offset N]",
  summary: "list accounts, oldest first",
  details: [
    "--email E    only the account with this email address",
    "--limit N    at most N accounts (1 to 1000, default 100)",
    "--offset N   skip the first N accounts",
  ],
  options: { email: { type: "string" }, limit: { type: "string" }, offset: { type: "string" } },
  async run({ values, operator }) {
    const query: Record<string, string> = {};
    for (const name of ["email", "limit", "offset"]) {
      const value = stringValue(values, name);
      if (value !== undefined) query[name] = value;
    }
    return (await operator()).listAccounts(query);
  },
};

/** A command taking one ACCOUNT and calling one operator action on its id. */
function onAccount(
  name: string,
  summary: string,
  act: (client: OperatorClient, id: string) => Promise<unknown>,
): Command {
  return {
    name,
    positionals: ["ACCOUNT"],
    usage: "",
    summary,
    details: [ACCOUNT],
    options: {},
    async run(input) {
      const client = await input.operator();
      return act(client, await resolveAccount(client, positional(input, 0)));
    },
  };
}

/** `zona accounts ...` */
export const accountsGroup: CommandGroup = {
  name: "accounts",
  summary: "open, list, show, disable and enable accounts; mark emails verified",
  commands: [
    create,
    list,
    onAccount("show", "show one account", (client, id) => client.getAccount(id)),
    onAccount("disable", "disable an account: its keys stop working", (client, id) =>
      client.setAccountDisabled(id, true),
    ),
    onAccount("enable", "enable a disabled account again", (client, id) =>
      client.setAccountDisabled(id, false),
    ),
    onAccount("verify-email", "mark the account's email address as verified", (client, id) =>
      client.verifyEmail(id),
    ),
  ],
};
