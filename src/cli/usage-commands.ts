import { type Command, type CommandGroup, type CommandInput, numeric, stringValue } from "./command.ts";
import type { OperatorClient } from "./operator-client.ts";
import { resolveAccount } from "./resolve-account.ts";

const FILTER_DETAILS = [
  "--account A   an account id or the account's email address",
  "--key K       an API key id",
  "--month M     a calendar month as YYYY-MM (UTC)",
];

async function filter(input: CommandInput, client: OperatorClient): Promise<Record<string, unknown>> {
  const account = stringValue(input.values, "account");
  const key = stringValue(input.values, "key");
  const month = stringValue(input.values, "month");
  return {
    ...(account !== undefined ? { account_id: await resolveAccount(client, account) } : {}),
    ...(key !== undefined ? { key_id: key } : {}),
    ...(month !== undefined ? { month } : {}),
  };
}

const list: Command = {
  name: "list",
  positionals: [],
  usage: "[--account A] [--key K] [--month YYYY-MM] [--limit N] [--offset N]",
  summary: "list usage records, newest first",
  details: [
    ...FILTER_DETAILS,
    "--limit N     at most N records (default 100)",
    "--offset N    skip N records",
  ],
  options: {
    account: { type: "string" },
    key: { type: "string" },
    month: { type: "string" },
    limit: { type: "string" },
    offset: { type: "string" },
  },
  async run(input) {
    const client = await input.operator();
    const limit = stringValue(input.values, "limit");
    const offset = stringValue(input.values, "offset");
    return client.listUsage({
      ...(await filter(input, client)),
      ...(limit !== undefined ? { limit: numeric(limit) } : {}),
      ...(offset !== undefined ? { offset: numeric(offset) } : {}),
    });
  },
};

const summary: Command = {
  name: "summary",
  positionals: [],
  usage: "[--account A] [--key K] [--month YYYY-MM]",
  summary: "what an account or a key used and spent in a month (default: this month)",
  details: FILTER_DETAILS,
  options: { account: { type: "string" }, key: { type: "string" }, month: { type: "string" } },
  async run(input) {
    const client = await input.operator();
    return client.usageSummary(await filter(input, client));
  },
};

/** `zona usage ...` */
export const usageGroup: CommandGroup = {
  name: "usage",
  summary: "read usage records and monthly summaries",
  commands: [list, summary],
};
