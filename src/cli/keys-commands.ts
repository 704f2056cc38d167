import { UsageError } from "./cli-errors.ts";
import {
  accountArgument,
  type Command,
  type CommandGroup,
  numeric,
  positional,
  stringValue,
} from "./command.ts";
import { resolveAccount } from "./resolve-account.ts";

/** The settings of a key, the same on create and update. */
const KEY_SETTINGS: Command["options"] = {
  name: { type: "string" },
  zones: { type: "string" },
  "monthly-limit": { type: "string" },
  rpm: { type: "string" },
  expires: { type: "string" },
};

const create: Command = {
  name: "create",
  positionals: [],
  optionalPositionals: ["ACCOUNT"],
  synopsisArguments: "ACCOUNT|--account ACCOUNT",
  usage: "--name N [--zones a,b] [--monthly-limit 12.5] [--rpm N] [--expires 2027-01-31T00:00:00Z]",
  summary: "issue an API key; the answer holds the secret `key`, shown this once only",
  details: [
    "ACCOUNT               the account: its id or its email address, here or as --account ACCOUNT",
    "--name N              a name for the key (required)",
    "--zones a,b           zones the key may run in, separated by commas (default: all of the installation)",
    "--monthly-limit X     the most the key may spend per calendar month, in the installation's currency",
    "--rpm N               the key's own tier limit in requests per minute, whatever the tier asked",
    "                      (default: the tier table's requests_per_minute)",
    "--expires T           when the key stops working, an ISO 8601 timestamp",
  ],
  options: { ...KEY_SETTINGS, account: { type: "string" } },
  async run(input) {
    const { values } = input;
    const account = accountArgument(input, "zona keys create");
    if (account === undefined) throw new UsageError("missing ACCOUNT", "zona keys create");
    const zones = stringValue(values, "zones");
    const monthlyLimit = stringValue(values, "monthly-limit");
    const rpm = stringValue(values, "rpm");
    const expires = stringValue(values, "expires");
    const client = await input.operator();
    const accountId = await resolveAccount(client, account);
    return client.createKey(accountId, {
      name: stringValue(values, "name"),
      ...(zones !== undefined ? { zones: zones.split(",").map((zone) => zone.trim()) } : {}),
      ...(monthlyLimit !== undefined ? { monthly_limit: numeric(monthlyLimit) } : {}),
      ...(rpm !== undefined ? { requests_per_minute: numeric(rpm) } : {}),
      ...(expires !== undefined ? { expires_at: expires } : {}),
    });
  },
};

const update: Command = {
  name: "update",
  positionals: ["KEY_ID"],
  usage: "[--name N] [--zones a,b|all] [--monthly-limit X|none] [--rpm N|none] [--expires T|never]",
  summary: "change an API key's settings; options not given stay as they are",
  details: [
    "KEY_ID                  the key's id (not the secret)",
    "--name N                a new name for the key",
    "--zones a,b|all         zones the key may run in, separated by commas; all: every zone of the installation",
    "--monthly-limit X|none  the most the key may spend per calendar month; none: no limit",
    "--rpm N|none            the key's own tier limit in requests per minute; none: the tier table's again",
    "--expires T|never       when the key stops working, an ISO 8601 timestamp; never: it does not expire",
    "A change holds for the key's next request.",
  ],
  options: KEY_SETTINGS,
  async run(input) {
    const { values } = input;
    const name = stringValue(values, "name");
    const zones = stringValue(values, "zones");
    const monthlyLimit = stringValue(values, "monthly-limit");
    const rpm = stringValue(values, "rpm");
    const expires = stringValue(values, "expires");
    return (await input.operator()).updateKey(positional(input, 0), {
      ...(name !== undefined ? { name } : {}),
      ...(zones !== undefined
        ? { zones: zones === "all" ? null : zones.split(",").map((zone) => zone.trim()) }
        : {}),
      ...(monthlyLimit !== undefined
        ? { monthly_limit: monthlyLimit === "none" ? null : numeric(monthlyLimit) }
        : {}),
      ...(rpm !== undefined ? { requests_per_minute: rpm === "none" ? null : numeric(rpm) } : {}),
      ...(expires !== undefined ? { expires_at: expires === "never" ? null : expires } : {}),
    });
  },
};

const list: Command = {
  name: "list",
  positionals: [],
  optionalPositionals: ["ACCOUNT"],
  usage: "[--account ACCOUNT]",
  summary: "list API keys (never their secrets)",
  details: [
    "ACCOUNT   only the keys of this account (its id or its email address), here or as --account ACCOUNT",
  ],
  options: { account: { type: "string" } },
  async run(input) {
    const account = accountArgument(input, "zona keys list");
    const client = await input.operator();
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
  summary: "issue, list, show, update and revoke API keys",
  commands: [create, list, show, update, revoke],
};
