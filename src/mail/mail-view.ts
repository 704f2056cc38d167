import type { MailRow } from "../store/repositories/mail-outbox.ts";

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

/** Which mails to list: `pending` keeps the ones no server took; newest first. */
export interface MailQuery {
  pending: boolean;
  limit: number;
  offset: number;
}
