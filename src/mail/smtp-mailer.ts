import type { FastifyBaseLogger } from "fastify";
import type { createTransport } from "nodemailer";
import { loadOnFirstUse } from "../load-on-first-use.ts";
import type { MailOutboxRepository } from "../store/repositories/mail-outbox.ts";
import type { Mailer, OutgoingMail } from "./mailer.ts";

// A mail server that does not answer must not hold a request's background work for minutes.
const CONNECT_TIMEOUT_MS = 10_000;
const SOCKET_TIMEOUT_MS = 30_000;

type Transport = ReturnType<typeof createTransport>;

// Loaded by the first mail: a server that sends none keeps nodemailer out of its memory.
const loadNodemailer = loadOnFirstUse(() => import("nodemailer"));

/**
 * Hands mail to an SMTP server (`app.mail.smtp_url`, smtp:// with STARTTLS when offered, or
 * smtps://). Each mail is written to the outbox first and then marked sent, or keeps the
 * server's error in `last_error`: the user can ask for the mail again.
 */
export class SmtpMailer implements Mailer {
  readonly mode = "smtp";
  private readonly url: string;
  private readonly from: string;
  private readonly outbox: MailOutboxRepository;
  private readonly now: () => Date;
  private readonly log: FastifyBaseLogger | undefined;
  private transport: Transport | undefined;

  constructor(deps: {
    url: string;
    from: string;
    outbox: MailOutboxRepository;
    now: () => Date;
    log?: FastifyBaseLogger;
  }) {
    this.url = deps.url;
    this.from = deps.from;
    this.outbox = deps.outbox;
    this.now = deps.now;
    this.log = deps.log;
  }

  async send(mail: OutgoingMail): Promise<void> {
    const row = await this.outbox.insert({ recipient: mail.to, subject: mail.subject, body: mail.text });
    try {
      await (await this.transporter()).sendMail({
        from: this.from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
      });
      await this.outbox.markSent(row.id, this.now());
    } catch (error) {
      // The message says what the server or the connection did; it never holds the mail's text.
      const reason = error instanceof Error ? error.message : String(error);
      this.log?.warn({ mail_id: row.id, reason }, "mail not sent; kept in the outbox");
      await this.outbox.markFailed(row.id, reason.slice(0, 1000));
    }
  }

  async close(): Promise<void> {
    this.transport?.close();
    this.transport = undefined;
  }

  // Made on first use: a `zona` command that never sends mail opens nothing.
  private async transporter(): Promise<Transport> {
    const { createTransport } = await loadNodemailer();
    this.transport ??= createTransport({
      url: this.url,
      connectionTimeout: CONNECT_TIMEOUT_MS,
      greetingTimeout: CONNECT_TIMEOUT_MS,
      socketTimeout: SOCKET_TIMEOUT_MS,
    });
    return this.transport;
  }
}
