import { describe, expect, it } from "vitest";
import { mailText } from "../../src/cli/mail-commands.ts";

const mail = {
  id: "6f0c5c9e-3a51-4a57-a7b5-0d6f3c1e9a10",
  object: "mail" as const,
  to: "ada@example.com",
  subject: "Confirm your email address",
  body: "Hello,\n\nto confirm your email address, open this link:\n\nhttp://localhost:8080/verify-email?token=zev_abc\n\nThe link works for 7 days.\n",
  status: "pending",
  sent_at: null,
  last_error: null,
  created_at: "2026-05-04T09:12:44.120Z",
};

describe("zona mail list prints the mails as text (docs/admin-api.md, CLI equivalents)", () => {
  it("a mail: To, Subject, Date, Status and Id lines, then its text with the link on a line of its own", () => {
    expect(mailText([mail], false)).toBe(
      [
        "To:      ada@example.com",
        "Subject: Confirm your email address",
        "Date:    2026-05-04T09:12:44.120Z",
        "Status:  pending (waiting in the outbox)",
        "Id:      6f0c5c9e-3a51-4a57-a7b5-0d6f3c1e9a10",
        "",
        "Hello,",
        "",
        "to confirm your email address, open this link:",
        "",
        "http://localhost:8080/verify-email?token=zev_abc",
        "",
        "The link works for 7 days.",
        "",
      ].join("\n"),
    );
  });

  it("several mails are separated by a rule; sent and failed mails say so", () => {
    const text = mailText(
      [
        { ...mail, status: "sent", sent_at: "2026-05-04T09:12:45.000Z" },
        { ...mail, id: "other", status: "failed", last_error: "550 mailbox unavailable" },
      ],
      false,
    );
    expect(text).toContain("Status:  sent 2026-05-04T09:12:45.000Z\n");
    expect(text).toContain("Status:  failed: 550 mailbox unavailable\n");
    expect(text.split(`\n${"-".repeat(72)}\n`)).toHaveLength(2);
  });

  it("no mail: one line saying so", () => {
    expect(mailText([], false)).toBe("No mail yet.\n");
    expect(mailText([], true)).toBe("No mail is waiting in the outbox.\n");
  });

  it("control characters (terminal escape sequences) in an address or a text are shown, not sent to the terminal", () => {
    const text = mailText(
      [{ ...mail, to: "x\u001b]0;owned\u0007@example.com", body: "a\u009b2Jb\r\n" }],
      false,
    );
    for (const control of ["\u001b", "\u0007", "\u009b", "\r"]) expect(text).not.toContain(control);
    expect(text).toContain("To:      x\\u001b]0;owned\\u0007@example.com\n");
    expect(text).toContain("a\\u009b2Jb\\u000d");
  });
});
