import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.ts";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../helpers/test-app.ts";
import {
  expectHealthy,
  expectSaneAnswer,
  FUZZ_SEED,
  type FuzzCase,
  fuzzRuns,
  jsonCases,
  pathCases,
  StatusTally,
} from "./hostile-values.ts";

// Every endpoint of the operator API (src/routes/admin, docs/admin-api.md) fed hostile
// input with the operator token. FUZZ_RUNS=300 for a longer search.
const RUNS = fuzzRuns(20);

/** Field names of the operator API's bodies and queries. */
const FIELDS = (
  "email password language email_verified name zones monthly_limit requests_per_minute " +
  "expires_at balance amount note account_id key_id month limit offset pending __proto__"
).split(" ");

/** The names of the fuzz's own account, key and base, put in the paths of the nearly valid cases. */
interface Ids {
  account: string;
  key: string;
}

type Endpoint = { method: string; name: string; cases: (ids: Ids) => fc.Arbitrary<FuzzCase> };

const body = (method: string, name: string, path: (ids: Ids) => string, valid: Record<string, unknown>) => ({
  method,
  name,
  cases: (ids: Ids) => jsonCases(`/admin/v1${path(ids)}`, valid, FIELDS),
});
const path = (method: string, name: string, query: readonly string[] = [], label = "") => ({
  method,
  name: `${name}${label}`,
  cases: () => pathCases(`/admin/v1${name}`, query),
});

// Every route of src/routes/admin. Bodies start from valid ones on the fuzz's own account and key;
// ids are fuzzed in the path (hostile, not UUIDs, UUIDs of nobody) and queries in the query.
const ENDPOINTS: Endpoint[] = [
  body("POST", "/accounts", () => "/accounts", {
    email: "fuzz-new@example.com",
    language: "de",
    email_verified: true,
  }),
  path("GET", "/accounts", ["email", "limit", "offset"]),
  path("GET", "/accounts/{id}"),
  path("POST", "/accounts/{id}/disable"),
  path("POST", "/accounts/{id}/enable"),
  path("POST", "/accounts/{id}/verify-email"),
  body("POST", "/accounts/{id}/keys", (ids) => `/accounts/${ids.account}/keys`, {
    name: "fuzz",
    zones: ["ch-ti"],
    monthly_limit: 10,
    requests_per_minute: 100,
    expires_at: "2099-12-31T23:59:59Z",
  }),
  path("POST", "/accounts/{id}/keys", [], " (hostile id)"),
  path("GET", "/accounts/{id}/keys"),
  path("GET", "/keys", ["account_id"]),
  path("GET", "/keys/{id}"),
  body("PATCH", "/keys/{id}", (ids) => `/keys/${ids.key}`, {
    name: "renamed",
    zones: null,
    monthly_limit: 5,
    requests_per_minute: null,
    expires_at: "2099-01-01",
  }),
  path("PATCH", "/keys/{id}", [], " (hostile id)"),
  path("POST", "/keys/{id}/revoke"),
  path("GET", "/accounts/{id}/credits"),
  body("PUT", "/accounts/{id}/credits", (ids) => `/accounts/${ids.account}/credits`, {
    balance: 10,
    note: "n",
  }),
  body("POST", "/accounts/{id}/credits", (ids) => `/accounts/${ids.account}/credits`, {
    amount: 1,
    note: "n",
  }),
  path("PUT", "/accounts/{id}/credits", [], " (hostile id)"),
  path("GET", "/metrics"),
  path("GET", "/usage", ["account_id", "key_id", "month", "limit", "offset"]),
  path("GET", "/usage/summary", ["account_id", "key_id", "month"]),
  path("GET", "/models"),
  path("POST", "/models/{id}/activate"),
  path("POST", "/models/{id}/deactivate"),
  path("GET", "/knowledge-bases"),
  path("POST", "/knowledge-bases/{id}/share"),
  path("POST", "/knowledge-bases/{id}/unshare"),
  path("GET", "/mail", ["pending", "limit", "offset"]),
  path("GET", "/machines"),
  body("POST", "/reload", () => "/reload", {}),
];

const CONFIG = {
  installation: { zones: [{ id: "ch-ti" }, { id: "ch-zh" }] },
  models: [
    { id: "gemma3.8-27b", kind: "chat" },
    { id: "big-on-request", kind: "chat", on_request: true },
  ],
};

describe("Hostile input on the operator API (docs/admin-api.md Errors): property-based, fixed seed", () => {
  let t: TestApp;
  const ids: Ids = { account: "", key: "" };
  const tally = new StatusTally();

  beforeAll(async () => {
    // A reload reads this same configuration again, never a file of the machine running the tests.
    const reloaded = () =>
      parseConfig({ ...CONFIG, server: { log_level: "silent", admin_token: ADMIN_TOKEN } });
    t = await startTestApp({ config: CONFIG, loadConfig: reloaded });
    const { accountId, keyId } = await t.newKey();
    ids.account = accountId;
    ids.key = keyId;
  }, 60_000);

  afterAll(async () => {
    tally.print(`operator API, ${RUNS} cases per endpoint, seed ${FUZZ_SEED}`);
    await t?.close();
  });

  it.each(
    ENDPOINTS,
  )("$method $name: malformed JSON, wrong types, huge numbers, hostile ids and queries never give a 500, every error in the operator API's shape", async (endpoint) => {
    await fc.assert(
      fc.asyncProperty(endpoint.cases(ids), async (request) => {
        const response = await t.fetch(request.path, {
          method: endpoint.method,
          headers: {
            authorization: `Bearer ${ADMIN_TOKEN}`,
            ...(request.contentType ? { "content-type": request.contentType } : {}),
          },
          ...(request.body === undefined ? {} : { body: request.body }),
          signal: AbortSignal.timeout(20_000),
        });
        const text = await response.text();
        tally.add(`${endpoint.method} ${endpoint.name}`, response.status, text);
        expectSaneAnswer("admin", response.status, text, response.headers.get("content-type"));
      }),
      { seed: FUZZ_SEED, numRuns: RUNS },
    );
    await expectHealthy(t);
    // The operator API still works for its own account after the cases.
    expect((await t.admin("GET", `/accounts/${ids.account}`)).status).toBe(200);
  }, 300_000);
});
