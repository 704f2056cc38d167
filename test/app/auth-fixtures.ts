import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";
import type { LoginResponse } from "../../src/contract/app-api.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

// The auth tests sign in many times a minute from 127.0.0.1: as a trusted network it gets 20 times
// the address limits (200 a minute). The limits themselves are tested on apps without it.
export const TRUSTED_LOOPBACK = { installation: { trusted_networks: ["127.0.0.0/8"] } };

/** A clock the test moves; the app reads it through `now`. */
export function movableClock() {
  let offsetMs = 0;
  return {
    now: () => new Date(Date.now() + offsetMs),
    advance(seconds: number) {
      offsetMs += seconds * 1000;
    },
  };
}

/** An app whose mail waits in the outbox (no SMTP server), with loopback trusted. */
export function startAuthApp(
  options: { store?: "pglite" | "postgres"; now?: () => Date; config?: Record<string, unknown> } = {},
): Promise<TestApp> {
  return startTestApp({
    config: { ...TRUSTED_LOOPBACK, ...options.config },
    ...(options.store ? { store: options.store } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
}

/** Calls the app API with a JSON body, optionally with a bearer token. */
export function postJson(t: TestApp, path: string, body: unknown, token?: string): Promise<Response> {
  return t.fetch(`/api/v1${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
  });
}

let serial = 0;

/** A fresh email address. */
export function newEmail(tag = "auth"): string {
  serial += 1;
  return `${tag}-${serial}-${Date.now()}@example.com`;
}

export const PASSWORD = "correct horse battery";

/** Registers through the API and returns the login response. */
export async function register(
  t: TestApp,
  options: { email?: string; password?: string; language?: string } = {},
): Promise<LoginResponse> {
  const response = await postJson(t, "/auth/register", {
    email: options.email ?? newEmail(),
    password: options.password ?? PASSWORD,
    ...(options.language ? { language: options.language } : {}),
  });
  if (response.status !== 201) throw new Error(`register: ${response.status} ${await response.text()}`);
  return (await response.json()) as LoginResponse;
}

/** Registers and follows the verification mail's link: a user who may use every endpoint. */
export async function verifiedUser(t: TestApp, options: { email?: string; language?: string } = {}) {
  const signedUp = await register(t, options);
  const [mail] = await mailsTo(t, signedUp.user.email);
  const verified = await postJson(t, "/auth/verify-email", {
    token: tokenOf(mail?.body ?? "", "verify-email"),
  });
  if (verified.status !== 200) throw new Error(`verify: ${verified.status} ${await verified.text()}`);
  return { ...signedUp, user: { ...signedUp.user, email_verified: true } };
}

/** Logs in through the API; the response as it came. */
export function login(t: TestApp, email: string, password = PASSWORD): Promise<Response> {
  return postJson(t, "/auth/login", { email, password });
}

/** A mail as the operator API lists it. */
export interface ListedMail {
  id: string;
  to: string;
  subject: string;
  body: string;
  status: string;
  sent_at: string | null;
  last_error: string | null;
}

/** The mails to one address, newest first, once every mail started has been written. */
export async function mailsTo(t: TestApp, email: string): Promise<ListedMail[]> {
  await t.app.services.accountMails.settled();
  const listed = await t.admin("GET", "/mail?limit=1000");
  return (listed.body.data as ListedMail[]).filter((mail) => mail.to === email);
}

/** The token of the link in a mail's text. */
export function tokenOf(text: string, page: "verify-email" | "reset-password"): string {
  const match = new RegExp(`/${page}\\?token=([A-Za-z0-9_%-]+)`).exec(text);
  if (!match?.[1]) throw new Error(`no ${page} link in: ${text}`);
  return decodeURIComponent(match[1]);
}

/** A mail a real SMTP server received, decoded. */
export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
}

/** A real SMTP server on 127.0.0.1 (no TLS, no login) that keeps what it receives. */
export async function startSmtpServer(options: { refuse?: boolean } = {}) {
  const received: ReceivedMail[] = [];
  const waiting: Array<(mail: ReceivedMail) => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (options.refuse) {
        const error = new Error("mailbox unavailable") as Error & { responseCode: number };
        error.responseCode = 550;
        callback(error);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const mail = parseMail(Buffer.concat(chunks).toString("utf8"), session);
        received.push(mail);
        for (const resolve of waiting.splice(0)) resolve(mail);
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    /** The next mail to arrive, or the first one already there for this address. */
    async next(to: string): Promise<ReceivedMail> {
      for (;;) {
        const found = received.find((mail) => mail.to.includes(to));
        if (found) return found;
        await new Promise<ReceivedMail>((resolve) => waiting.push(resolve));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function parseMail(
  raw: string,
  session: { envelope: { mailFrom: false | { address: string }; rcptTo: Array<{ address: string }> } },
): ReceivedMail {
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, " ");
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}:\\s*(.*)$`, "im").exec(head)?.[1]?.trim() ?? "";
  const encoding = header("Content-Transfer-Encoding").toLowerCase();
  const text =
    encoding === "quoted-printable"
      ? decodeQuotedPrintable(body)
      : encoding === "base64"
        ? Buffer.from(body, "base64").toString("utf8")
        : body;
  return {
    from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
    to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
    subject: decodeEncodedWords(header("Subject")),
    text: text.replace(/\r\n/g, "\n"),
  };
}

function decodeQuotedPrintable(text: string): string {
  const joined = text.replace(/=\r?\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const hex = joined.slice(i + 1, i + 3);
    if (joined[i] === "=" && /^[0-9A-F]{2}$/i.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(joined[i] ?? "", "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

function decodeEncodedWords(text: string): string {
  return text.replace(/=\?utf-8\?([QB])\?([^?]*)\?=\s*/gi, (_all, kind: string, data: string) =>
    kind.toUpperCase() === "B"
      ? Buffer.from(data, "base64").toString("utf8")
      : decodeQuotedPrintable(data.replace(/_/g, " ")),
  );
}
