import { afterEach, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";
import { mailsTo, register, TRUSTED_LOOPBACK } from "./auth-fixtures.ts";

// docs/configuration.md `app.public_url`: unset, mail links point to the address Zona listens on
// (a wildcard address read as localhost), on whatever port; set, they point there.

describe("mail links follow the address Zona listens on unless app.public_url says otherwise", () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function verificationLink(options: Parameters<typeof startTestApp>[0]): Promise<string> {
    t = await startTestApp({ ...options, config: { ...TRUSTED_LOOPBACK, ...options?.config } });
    const { user } = await register(t);
    const [mail] = await mailsTo(t, user.email);
    const link = /(\S+)\/verify-email\?token=/.exec(mail?.body ?? "")?.[1];
    if (!link) throw new Error(`no verification link in: ${mail?.body}`);
    return link;
  }

  it("listening on every address (HOST 0.0.0.0) on a port of its own: the link is http://localhost:<that port>", async () => {
    const link = await verificationLink({ listenHost: "0.0.0.0" });
    const port = new URL((t as TestApp).url).port;
    expect(port).not.toBe("8080");
    expect(link).toBe(`http://localhost:${port}`);
  });

  it("listening on one address: the link names it and the port", async () => {
    const link = await verificationLink({ listenHost: "127.0.0.1" });
    expect(link).toBe((t as TestApp).url);
  });

  it("with app.public_url set (behind a proxy): the link is public_url's, whatever the address", async () => {
    const link = await verificationLink({
      listenHost: "0.0.0.0",
      config: { app: { public_url: "https://chat.example.ch/" } },
    });
    expect(link).toBe("https://chat.example.ch");
  });
});
