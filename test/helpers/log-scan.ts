import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";

/**
 * A marker tests put into the texts of users (prompts, messages, inputs, queries): it must never
 * reach a log line. Letters and digits only, so that no escaping or encoding changes it.
 */
export const CANARY = "zonacanary7f3a";

/** A user's text with the canary in it. */
export function withCanary(text: string): string {
  return `${text} ${CANARY}`;
}

/** One secret or user text found in a log line. */
export interface LeakFinding {
  /** The log file (relative to the scanned folder) and its line number, from 1. */
  file: string;
  line: number;
  kind: LeakKind;
  /** The start of what was found, cut so that the report does not repeat the secret. */
  excerpt: string;
}

/** What a log line must never hold. */
export type LeakKind =
  | "api key"
  | "bearer value"
  | "access token"
  | "refresh token"
  | "mailed token"
  | "known secret"
  | "user text (canary)";

// Each pattern stands alone in a word, so that "task-…" or an id never reads as a key. The
// lengths are those of real ones: a shortened key (`sk-AbCdEfGh...`) may be logged.
const PATTERNS: Array<{ kind: LeakKind; pattern: RegExp }> = [
  { kind: "api key", pattern: /(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{40,}/g },
  // Any value after "Bearer" but a redaction; the service's own messages name the scheme only
  // ("Bearer sk-...", "Bearer <ZONA_ADMIN_TOKEN>"), which are too short or not token characters.
  { kind: "bearer value", pattern: /Bearer\s+(?!\[redacted\])[A-Za-z0-9_~+/=-][A-Za-z0-9._~+/=-]{11,}/gi },
  { kind: "access token", pattern: /(?<![A-Za-z0-9_-])zat_[A-Za-z0-9_-]{16,}/g },
  { kind: "access token", pattern: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g },
  { kind: "refresh token", pattern: /(?<![A-Za-z0-9_-])zrt_[A-Za-z0-9_-]{16,}/g },
  { kind: "mailed token", pattern: /(?<![A-Za-z0-9_-])z(ev|pr)_[A-Za-z0-9_-]{16,}/g },
];

/**
 * The leaks of one log text (NDJSON or plain lines): keys, bearer values, access and refresh tokens,
 * mailed tokens, the canary, and each of `secrets` (admin tokens, passwords) as it is written.
 */
export function scanLogText(text: string, secrets: readonly string[], file = "log"): LeakFinding[] {
  const findings: LeakFinding[] = [];
  const lines = text.split("\n");
  for (const [index, line] of lines.entries()) {
    if (line === "") continue;
    const found = (kind: LeakKind, at: number, match: string) =>
      findings.push({ file, line: index + 1, kind, excerpt: cut(line, at, match) });
    for (const { kind, pattern } of PATTERNS) {
      for (const match of line.matchAll(pattern)) found(kind, match.index, match[0]);
    }
    for (const secret of secrets) {
      const at = line.indexOf(secret);
      if (at >= 0) found("known secret", at, secret);
    }
    const at = line.indexOf(CANARY);
    if (at >= 0) found("user text (canary)", at, CANARY);
  }
  return findings;
}

/** The leaks of every file in a folder of logs. */
export async function scanLogFolder(folder: string, secrets: readonly string[]): Promise<LeakFinding[]> {
  const findings: LeakFinding[] = [];
  for (const name of (await readdir(folder)).sort()) {
    const path = join(folder, name);
    findings.push(...scanLogText(await readFile(path, "utf8"), secrets, relative(folder, path)));
  }
  return findings;
}

/** A readable report of findings, one a line, without the secrets themselves. */
export function describeFindings(findings: readonly LeakFinding[]): string {
  return findings.map((f) => `${f.file}:${f.line}: ${f.kind}: …${f.excerpt}…`).join("\n");
}

// The names under which tests keep the passwords and operator tokens they send.
const SECRET_LITERAL =
  /\b\w*(?:password|passphrase|admin_token|admin|token)\w*["']?\s*[:=]\s*["'`]([^"'`\n$]{8,})["'`]/gi;

/**
 * The passwords and operator tokens the tests send, read from their source: every string literal of
 * eight characters or more given to a name with "password", "admin" or "token" in it.
 */
export async function testSecrets(testRoot: string): Promise<string[]> {
  const found = new Set<string>();
  for (const path of await sourceFiles(testRoot)) {
    for (const match of (await readFile(path, "utf8")).matchAll(SECRET_LITERAL)) {
      const value = match[1];
      if (value !== undefined && !looksLikeProse(value)) found.add(value);
    }
  }
  return [...found].sort();
}

// A literal with a space and no digit is more likely a message ("the password is wrong") than a
// password; the tests' passphrases ("correct horse battery") are kept by name below.
function looksLikeProse(value: string): boolean {
  return /\s/.test(value) && !/\d/.test(value) && !/horse|passphrase|password/i.test(value);
}

async function sourceFiles(folder: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) files.push(...(await sourceFiles(path)));
    else if (entry.name.endsWith(".ts")) files.push(path);
  }
  return files;
}

function cut(line: string, at: number, match: string): string {
  const shown = Math.min(6, Math.max(2, Math.floor(match.length / 4)));
  return `${line.slice(Math.max(0, at - 40), at)}${match.slice(0, shown)}[${match.length - shown} more]`;
}
