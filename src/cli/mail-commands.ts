import { type Command, type CommandGroup, numeric, stringValue } from "./command.ts";

const list: Command = {
  name: "list",
  positionals: [],
  usage: "[--pending] [--limit N] [--offset N]",
  summary: "the mail the service wrote (verification and reset links), newest first",
  details: [
    "--pending    only mail no SMTP server took: the outbox when app.mail.smtp_url is not set,",
    "             and mail the server refused",
    "--limit N    at most N mails (1 to 1000, default 100)",
    "--offset N   skip the first N mails",
  ],
  options: { pending: { type: "boolean" }, limit: { type: "string" }, offset: { type: "string" } },
  async run(input) {
    const limit = stringValue(input.values, "limit");
    const offset = stringValue(input.values, "offset");
    return (await input.operator()).listMail({
      ...(input.values.pending ? { pending: true } : {}),
      ...(limit !== undefined ? { limit: numeric(limit) } : {}),
      ...(offset !== undefined ? { offset: numeric(offset) } : {}),
    });
  },
};

/** `zona mail ...` */
export const mailGroup: CommandGroup = {
  name: "mail",
  summary: "read the mail the service wrote (the outbox, when no SMTP server is configured)",
  commands: [list],
};
