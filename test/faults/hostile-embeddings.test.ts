import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostileEngineServer, type Misbehaviour } from "../fakes/hostile-engine-server.ts";
import type { TestApp } from "../helpers/test-app.ts";
import {
  ANSWER_BOUND_MS,
  type Endpoint,
  eventually,
  expectShape,
  hostileMachine,
  machineUp,
  machineView,
  nothingReserved,
  pricedModel,
  send,
  startHostileApp,
  usageRecord,
} from "./hostile-fixtures.ts";

// Embeddings go to the catalogue's one embedding model: one app per protocol, one machine, the
// misbehaviour switched between cases (and the machine seen back up before the next one).
const PROTOCOLS: Array<{ protocol: string; endpoint: Endpoint }> = [
  { protocol: "openai", endpoint: "openai-embeddings" },
  { protocol: "ollama", endpoint: "ollama-embed" },
  { protocol: "tei", endpoint: "tei-embed" },
];
const BEHAVIOURS: Misbehaviour[] = [
  "hang",
  "headers-hang",
  "cut-body",
  "invalid-json",
  "end-mid-event",
  "trickle",
  "html-500",
  "html-503",
  "endless",
  "huge",
];
const SERVER_NEVER_ENDS: ReadonlySet<Misbehaviour> = new Set([
  "hang",
  "headers-hang",
  "trickle",
  "endless",
  "huge",
]);
const MODEL = "bge-m3";

const figures: string[] = [];

describe.each(PROTOCOLS)("hostile engines: embeddings on a hostile $protocol engine", ({
  protocol,
  endpoint,
}) => {
  const hostile = new HostileEngineServer();
  const label = `emb-${protocol}`;
  let t: TestApp;
  let good: { key: string; keyId: string };

  beforeAll(async () => {
    await hostile.start();
    t = await startHostileApp({
      models: [pricedModel(MODEL, "embedding")],
      machines: [hostileMachine(hostile, label, protocol, [MODEL])],
    });
    good = await t.newKey();
  });

  afterAll(async () => {
    await t?.close();
    await hostile.close();
    if (protocol === "tei") console.info(`hostile engines, embeddings:\n${figures.join("\n")}`);
  });

  it.each(
    BEHAVIOURS,
  )("%s: a clear 502 (or 503) in bounded time, released, the engine hung up on; and back up once it behaves", async (behaviour) => {
    hostile.behave(label, behaviour);
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 100 } });
    const seen = await send(t, key, endpoint, MODEL, false);
    expect(seen.ms).toBeLessThan(ANSWER_BOUND_MS);
    expectShape(seen, "error", behaviour === "cut-body");
    expect(await usageRecord(t, keyId, seen.requestId)).toMatchObject({ outcome: "failed", cost: 0 });
    await nothingReserved(t, keyId);
    const exchange = hostile.exchangesOf(label).at(-1);
    if (!exchange) throw new Error("no exchange");
    expect(exchange.behaviour).toBe(behaviour);
    const end = await eventually(() => (exchange.end === "open" ? undefined : exchange.end));
    if (SERVER_NEVER_ENDS.has(behaviour)) expect(end).toBe("closed");

    // Back up: once the engine behaves, a request is answered (after the breaker's cool-down, if it opened).
    hostile.behave(label, "well");
    const back = await eventually(async () => {
      const again = await send(t, good.key, endpoint, MODEL, false);
      return again.status === 200 ? again : undefined;
    });
    expect(back.json.data).toHaveLength(2);
    expect((await machineView(t, label)).state).toBe("up");
    figures.push(
      `${protocol} ${behaviour}: ${seen.status} in ${Math.round(seen.ms)} ms, engine ${end} after ${exchange.bytesSent} bytes`,
    );
  });

  it("passive health: three failed answers open the circuit (machines view, metric), requests skip the machine, then it is tried after the cool-down and is up again", async () => {
    hostile.behave(label, "html-500");
    for (let i = 0; i < 3; i++) expect((await send(t, good.key, endpoint, MODEL, false)).status).toBe(502);
    const open = await machineView(t, label);
    expect(open).toMatchObject({
      state: "circuit_open",
      last_error: { source: "request", kind: "status", status: 500 },
    });
    expect(await machineUp(t, label)).toBe(0);
    const asked = hostile.exchangesOf(label).length;
    const skipped = await send(t, good.key, endpoint, MODEL, false);
    expect(skipped.status).toBe(503);
    expect(skipped.json.error.type).toMatch(/^(model|zone)_unavailable$/);
    expect(hostile.exchangesOf(label)).toHaveLength(asked);

    hostile.behave(label, "well");
    await eventually(async () => ((await machineView(t, label)).state === "half_open" ? true : undefined));
    expect((await send(t, good.key, endpoint, MODEL, false)).status).toBe(200);
    expect((await machineView(t, label)).state).toBe("up");
    expect(await machineUp(t, label)).toBe(1);
  });
});
