import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../config/schema.ts";
import type { MailOutboxRepository } from "../store/repositories/mail-outbox.ts";
import type { Mailer } from "./mailer.ts";
import { OutboxMailer } from "./outbox-mailer.ts";
import { SmtpMailer } from "./smtp-mailer.ts";

/** The SMTP mailer when `app.mail.smtp_url` is set, otherwise the outbox the operator reads. */
export function createMailer(
  config: Config,
  outbox: MailOutboxRepository,
  now: () => Date,
  log?: FastifyBaseLogger,
): Mailer {
  const url = config.app.mail.smtp_url;
  if (url === undefined) return new OutboxMailer(outbox);
  return new SmtpMailer({ url, from: config.app.mail.from, outbox, now, ...(log ? { log } : {}) });
}
