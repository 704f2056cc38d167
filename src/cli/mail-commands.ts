import type { mailView } from "../routes/admin/operator-views.ts";
import { type Command, type CommandGroup, numeric, stringValue } from "./command.ts";

/** A mail as the operator API lists it. */
type Mail = ReturnType<typeof mailView>;

const list: Command = {
  name: "list",
  positionals: [],
  usage: "[--pending] [--limit N] [--offset N] [--json]",
  summary: "the mail the service wrote (verification and reset links), newest first",
  details: [
    "--pending    only mail no SMTP server took: the outbox when app.mail.smtp_url is not set,",
    "             and mail the server refused",
    "--limit N    at most N mails (1 to 1000, default 100)",
    "--offset N   skip the first N mails",
    "--json       print the operator API's JSON answer instead of the mails as text",
    "",
    "Each mail is printed with its To, Subject, Date and Status lines, then its text with the link.",
    "The links are live: whoever reads them can confirm the address or set the password.",
  ],
  options: {
    pending: { type: "boolean" },
    limit: { type: "string" },
    offset: { type: "string" },
    json: { type: "boolean" },
  },
  async run(input) {
    const limit = stringValue(input.values, "limit");
    const offset = stringValue(input.values, "offset");
    const mail = await (await input.operator()).listMail({
      ...(input.values.pending ? { pending: true } : {}),
      ...(limit !== undefined ? { limit: numeric(limit) } : {}),
      ...(offset !== undefined ? { offset: numeric(offset) } : {}),
    });
    return input.values.json === true ? mail : mailText(mail.data, input.values.pending === true);
  },
};

/** `zona mail ...` */
export const mailGroup: CommandGroup = {
  name: "mail",
  summary: "read the mail the service wrote (the outbox, when no SMTP server is configured)",
  commands: [list],
};

const RULE = "-".repeat(72);

/** The mails as a reader sees them in a mail program: a few header lines, then the text. */
export function mailText(mails: Mail[], pending: boolean): string {
  if (mails.length === 0) return pending ? "No mail is waiting in the outbox.\n" : "No mail yet.\n";
  return mails
    .map((mail) =>
      [
        `To:      ${printable(mail.to)}`,
        `Subject: ${printable(mail.subject)}`,
        `Date:    ${mail.created_at}`,
        `Status:  ${status(mail)}`,
        `Id:      ${mail.id}`,
        "",
        printable(mail.body).trimEnd(),
        "",
      ].join("\n"),
    )
    .join(`${RULE}\n`);
}

function status(mail: Mail): string {
  if (mail.status === "sent") return `sent ${mail.sent_at ?? ""}`.trimEnd();
  if (mail.status === "failed") return `failed: ${printable(mail.last_error ?? "")}`;
  return "pending (waiting in the outbox)";
}

// Addresses and texts reach a terminal: control characters (escape sequences) are shown, not obeyed.
// biome-ignore lint/suspicious/noControlCharactersInRegex: they are what is looked for.
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
