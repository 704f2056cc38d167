import type { MailOutboxRepository } from "../store/repositories/mail-outbox.ts";
import type { Mailer, OutgoingMail } from "./mailer.ts";

/** With no SMTP server configured: mail waits in `mail_outbox` (sent_at null) for the operator to read. */
export class OutboxMailer implements Mailer {
  readonly mode = "outbox";
  private readonly outbox: MailOutboxRepository;
  constructor(outbox: MailOutboxRepository) {
    this.outbox = outbox;
  }

  async send(mail: OutgoingMail): Promise<void> {
    await this.outbox.insert({ recipient: mail.to, subject: mail.subject, body: mail.text });
  }

  async close(): Promise<void> {}
}
