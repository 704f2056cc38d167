/** A plain-text mail to one person. */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Delivers the service's mail. Every mail is also written to `mail_outbox`, so an operator can
 * read it (`zona mail list`); a delivery that fails is recorded there and never fails the caller.
 */
export interface Mailer {
  /** `outbox`: kept for the operator (no SMTP server configured); `smtp`: handed to the server. */
  readonly mode: "outbox" | "smtp";
  send(mail: OutgoingMail): Promise<void>;
  close(): Promise<void>;
}
