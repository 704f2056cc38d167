import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.ts";
import { parseConfig } from "../../src/config/load.ts";
import type { Store } from "../../src/store/database.ts";
import { openTestStore } from "../helpers/test-store.ts";

const LOCAL = "zlo_local-credential-of-this-test-0123456789";
const ADMIN = "admin-token-of-this-test-0123456789";
const OTHER_MACHINE = "203.0.113.9";

/** The real app, not listening: requests are injected with the client address the test names. */
async function app(server: Record<string, unknown>, localOperatorToken?: string) {
  const store = await openTestStore();
  const config = parseConfig({ server: { log_level: "silent", ...server } });
  const built = await buildApp({ config, store, ...(localOperatorToken ? { localOperatorToken } : {}) });
  opened.push({ app: built, store });
  return built;
}
const opened: Array<{ app: FastifyInstance; store: Store }> = [];

async function accounts(
  target: FastifyInstance,
  from: string,
  authorization?: string,
  headers: Record<string, string> = {},
) {
  const response = await target.inject({
    method: "GET",
    url: "/admin/v1/accounts",
    remoteAddress: from,
    headers: { ...(authorization ? { authorization } : {}), ...headers },
  });
  const body = response.json();
  if (body?.error) body.error.request_id = "req_";
  return { status: response.statusCode, body };
}

describe("The operator API accepts the server's local credential from this machine only (docs/admin-api.md, Authentication)", () => {
  afterEach(async () => {
    for (const { app: built, store } of opened.splice(0)) {
      await built.close();
      await store.close();
    }
  });

  it("without ZONA_ADMIN_TOKEN: the local credential from a loopback address gets 200", async () => {
    const target = await app({}, LOCAL);
    for (const from of ["127.0.0.1", "127.0.0.53", "::1", "::ffff:127.0.0.1"]) {
      expect((await accounts(target, from, `Bearer ${LOCAL}`)).status, from).toBe(200);
    }
  });

  it("without ZONA_ADMIN_TOKEN: no credential, a wrong one, Basic, or the right one from another machine get the same 401 invalid_admin_token", async () => {
    const target = await app({}, LOCAL);
    const wrong = await accounts(target, "127.0.0.1", "Bearer zlo_wrong");
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toMatchObject({ code: "invalid_admin_token", type: "invalid_request_error" });
    for (const [from, authorization] of [
      ["127.0.0.1", undefined],
      ["127.0.0.1", `Basic ${LOCAL}`],
      ["127.0.0.1", `Bearer ${LOCAL}x`],
      [OTHER_MACHINE, `Bearer ${LOCAL}`],
      ["::ffff:203.0.113.9", `Bearer ${LOCAL}`],
    ] as const) {
      expect(await accounts(target, from, authorization), `${from} ${authorization}`).toEqual(wrong);
    }
  });

  it("behind a trusted proxy (server.trust_proxy): the local credential counts only when the proxy's client is this machine", async () => {
    const target = await app({ trust_proxy: true }, LOCAL);
    const proxied = (client: string) =>
      accounts(target, "127.0.0.1", `Bearer ${LOCAL}`, { "x-forwarded-for": client });
    expect((await proxied(OTHER_MACHINE)).status).toBe(401);
    expect((await proxied("127.0.0.1")).status).toBe(200);
  });

  it("ZONA_ADMIN_TOKEN still works from any address, beside the local credential", async () => {
    const target = await app({ admin_token: ADMIN }, LOCAL);
    expect((await accounts(target, OTHER_MACHINE, `Bearer ${ADMIN}`)).status).toBe(200);
    expect((await accounts(target, "127.0.0.1", `Bearer ${ADMIN}`)).status).toBe(200);
    expect((await accounts(target, "127.0.0.1", `Bearer ${LOCAL}`)).status).toBe(200);
    expect((await accounts(target, OTHER_MACHINE, `Bearer ${LOCAL}`)).status).toBe(401);
    expect((await accounts(target, OTHER_MACHINE, "Bearer wrong-token")).status).toBe(401);
  });

  it("an app given neither has no operator API (404 unknown_endpoint), as before", async () => {
    const target = await app({});
    const answer = await accounts(target, "127.0.0.1", `Bearer ${LOCAL}`);
    expect(answer.status).toBe(404);
    expect(answer.body.error.code).toBe("unknown_endpoint");
  });
});
