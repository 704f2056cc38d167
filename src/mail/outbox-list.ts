import { asFields, booleanField, numberField } from "../http/fields.ts";
import type { MailOutboxRepository, MailRow } from "../store/repositories/mail-outbox.ts";

/** A mail of the outbox as the operator API shows it (the body holds the link the user needs). */
export function mailView(row: MailRow) {
  return {
    id: row.id,
    object: "mail" as const,
    to: row.recipient,
    subject: row.subject,
    body: row.body,
    /** `sent`: an SMTP server took it; `failed`: it refused or did not answer; `pending`: waiting in the outbox. */
    status: row.sentAt ? "sent" : row.lastError ? "failed" : "pending",
    sent_at: row.sentAt?.toISOString() ?? null,
    last_error: row.lastError,
    created_at: row.createdAt.toISOString(),
  };
}

/** `GET /admin/v1/mail?pending=true&limit=&offset=`: newest first; `pending` keeps the mails no server took. */
export async function listOutbox(outbox: MailOutboxRepository, query: unknown) {
  const fields = asFields(query);
  const rows = await outbox.list({
    pending: booleanField(fields, "pending") ?? false,
    limit: numberField(fields, "limit", { min: 1, max: 1000, integer: true }) ?? 100,
    offset: numberField(fields, "offset", { min: 0, max: Number.MAX_SAFE_INTEGER, integer: true }) ?? 0,
  });
  return { object: "list" as const, data: rows.map(mailView) };
}
