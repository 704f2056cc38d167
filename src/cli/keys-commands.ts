import { type Command, type CommandGroup, numeric, positional, stringValue } from "./command.ts";
import { resolveAccount } from "./resolve-account.ts";

const create: Command = {
  name: "create",
  positionals: ["ACCOUNT"],
  usage: "--name N [--zones a,b] [--monthly-limit 12.5] [--expires 2027-01-31T00:00:00Z]",
  summary: "issue an API key; the answer holds the secret `key`, shown this once only",
  details: [
    "ACCOUNT               an account id or the account's email address",
    "--name N              a name for the key (required)",
    "--zones a,b           zones the key may run in, separated by commas (default: all of the installation)",
    "--monthly-limit X     the most the key may spend per calendar month, in the installation's currency",
    "--expires T           when the key stops working, an ISO 8601 timestamp",
  ],
  options: {
    name: { type: "string" },
    zones: { type: "string" },
    "monthly-limit": { type: "string" },
    expires: { type: "string" },
  },
  async run(input) {
    const { values } = input;
    const zones = stringValue(values, "zones");
    const monthlyLimit = stringValue(values, "monthly-limit");
    const expires = stringValue(values, "expires");
    const client = await input.operator();
    const accountId = await resolveAccount(client, positional(input, 0));
    return client.createKey(accountId, {
      name: stringValue(values, "name"),
      ...(zones !== undefined ? { zones: zones.split(",").map((zone) => zone.trim()) } : {}),
      ...(monthlyLimit !== undefined ? { monthly_limit: numeric(monthlyLimit) } : {}),
      ...(expires !== undefined ? { expires_at: expires } : {}),
    });
  },
};

const list: Command = {
  name: "list",
  positionals: [],
  usage: "[--account ACCOUNT]",
  summary: "list API keys (never their secrets)",
  details: ["--account ACCOUNT   only the keys of this account (an id or an email address)"],
  options: { account: { type: "string" } },
  async run({ values, operator }) {
    const client = await operator();
    const account = stringValue(values, "account");
    return client.listKeys(
      account === undefined ? {} : { account_id: await resolveAccount(client, account) },
    );
  },
};

const show: Command = {
  name: "show",
  positionals: ["KEY_ID"],
  usage: "",
  summary: "show one API key",
  details: ["KEY_ID   the key's id (not the secret)"],
  options: {},
  async run(input) {
    return (await input.operator()).getKey(positional(input, 0));
  },
};

const revoke: Command = {
  name: "revoke",
  positionals: ["KEY_ID"],
  usage: "",
  summary: "revoke an API key for good",
  details: ["KEY_ID   the key's id (not the secret)"],
  options: {},
  async run(input) {
    return (await input.operator()).revokeKey(positional(input, 0));
  },
};

/** `zona keys ...` */
export const keysGroup: CommandGroup = {
  name: "keys",
  summary: "issue, list, show and revoke API keys",
  commands: [create, list, show, revoke],
};
