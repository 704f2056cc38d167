import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostileEngineServer, type Misbehaviour } from "../fakes/hostile-engine-server.ts";
import { FakeOllamaServer, FakeOpenAiServer, FakeTeiServer } from "../fakes/index.ts";
import type { TestApp } from "../helpers/test-app.ts";
import {
  ANSWER_BOUND_MS,
  ENDPOINTS,
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

/** Failures before the first byte reached the client: the next machine of the zone takes the request. */
const BEFORE_FIRST_BYTE: Misbehaviour[] = ["hang", "headers-hang", "invalid-json", "html-503", "trickle"];
/** These break a whole answer before it is sent, but a stream only after its first chunk (no failover then). */
const WHOLE_ONLY: Misbehaviour[] = ["cut-body", "end-mid-event"];
const CHAT: Endpoint[] = ["openai-chat", "ollama-chat"];

interface FailoverCase {
  endpoint: Endpoint;
  behaviour: Misbehaviour;
  stream: boolean;
  label: string;
}
const failovers: FailoverCase[] = CHAT.flatMap((endpoint) =>
  [false, true].flatMap((stream) =>
    [...BEFORE_FIRST_BYTE, ...(stream ? [] : WHOLE_ONLY)].map((behaviour) => ({
      endpoint,
      behaviour,
      stream,
      label: `fo-${endpoint}-${behaviour}-${stream ? "s" : "n"}`,
    })),
  ),
);
const TEI_BAD = "fo-tei-bad";
const EMBEDDING = "bge-m3";

describe("hostile engines: machines marked down and back up, and failover before the first byte", () => {
  const hostile = new HostileEngineServer();
  const goodOpenAi = new FakeOpenAiServer();
  const goodOllama = new FakeOllamaServer();
  const goodTei = new FakeTeiServer();
  let t: TestApp;

  beforeAll(async () => {
    await Promise.all([hostile.start(), goodOpenAi.start(), goodOllama.start(), goodTei.start()]);
    for (const { label, behaviour } of failovers) hostile.behave(label, behaviour);
    const served = (protocol: string) =>
      failovers.filter((c) => ENDPOINTS[c.endpoint].protocol === protocol).map((c) => c.label);
    t = await startHostileApp({
      engines: {
        probe_interval_seconds: 0.5,
        // Probes answer within a second even while the suite keeps more workers than cores busy: a
        // tighter timeout marked the good machines down, and failover had nowhere to go.
        probe_timeout_ms: 1_000,
        circuit_cooldown_seconds: 0.5,
        circuit_max_cooldown_seconds: 1,
      },
      models: [
        pricedModel("updown", "chat"),
        pricedModel(EMBEDDING, "embedding"),
        ...failovers.map(({ label }) => pricedModel(label, "chat")),
      ],
      machines: [
        hostileMachine(hostile, "updown", "openai", ["updown"]),
        ...failovers.map(({ label, endpoint }) =>
          hostileMachine(hostile, label, ENDPOINTS[endpoint].protocol, [label]),
        ),
        {
          name: "good-openai",
          zone: "ch",
          protocol: "openai",
          url: goodOpenAi.url,
          models: served("openai"),
          capacity: 100,
        },
        {
          name: "good-ollama",
          zone: "ch",
          protocol: "ollama",
          url: goodOllama.url,
          models: served("ollama"),
          capacity: 100,
        },
        hostileMachine(hostile, TEI_BAD, "tei", [EMBEDDING]),
        {
          name: "good-tei",
          zone: "ch",
          protocol: "tei",
          url: goodTei.url,
          models: [EMBEDDING],
          capacity: 100,
        },
      ],
    });
    // As main.ts does once the server listens: the periodic probes (and the start-up check).
    t.app.reloader.startBackground();
  });

  afterAll(async () => {
    await t?.close();
    await Promise.all([hostile.close(), goodOpenAi.close(), goodOllama.close(), goodTei.close()]);
  });

  it("active probe: an engine whose health check fails is marked down without any request, skipped (503, nothing sent), and taken back once it answers", async () => {
    const { key } = await t.newKey();
    expect((await send(t, key, "openai-chat", "updown", false)).status).toBe(200);

    hostile.setHealth("updown", "down");
    const down = await eventually(async () => {
      const view = await machineView(t, "updown");
      return view.state === "down" ? view : undefined;
    });
    expect(down.last_error).toMatchObject({ source: "probe", kind: "status", status: 503 });
    expect(await machineUp(t, "updown")).toBe(0);
    const asked = hostile.exchangesOf("updown").length;
    const skipped = await send(t, key, "openai-chat", "updown", false);
    expect(skipped.status).toBe(503);
    expect(skipped.json.error.type).toBe("zone_unavailable");
    expect(hostile.exchangesOf("updown")).toHaveLength(asked);

    hostile.setHealth("updown", "hang");
    const silent = await eventually(async () => {
      const view = await machineView(t, "updown");
      return view.last_error?.kind === "timeout" ? view : undefined;
    }, 10_000);
    expect(silent).toMatchObject({ state: "down", last_error: { source: "probe", kind: "timeout" } });

    hostile.setHealth("updown", "up");
    await eventually(async () => ((await machineView(t, "updown")).state === "up" ? true : undefined));
    expect(await machineUp(t, "updown")).toBe(1);
    expect((await send(t, key, "openai-chat", "updown", true)).status).toBe(200);
  });

  it.each(
    failovers,
  )("failover, $endpoint (stream: $stream), $behaviour on the first machine: the second machine of the zone answers, charged once", async ({
    endpoint,
    stream,
    label,
    behaviour,
  }) => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 100 } });
    const good = ENDPOINTS[endpoint].protocol === "openai" ? "good-openai" : "good-ollama";
    // Equally loaded machines take turns: within two requests the hostile one is asked first.
    let last: { requestId: string } | undefined;
    for (let i = 0; i < 4 && hostile.exchangesOf(label).length === 0; i++) {
      const seen = await send(t, key, endpoint, label, stream);
      expect(seen.ms).toBeLessThan(ANSWER_BOUND_MS);
      expectShape(seen, "ok");
      last = seen;
    }
    expect(hostile.exchangesOf(label)).toHaveLength(1);
    if (!last) throw new Error("no request");
    const record = await usageRecord(t, keyId, last.requestId);
    expect(record).toMatchObject({ outcome: "ok", machine: good });
    expect(record.cost).toBeGreaterThan(0);
    const records = (await t.admin("GET", `/usage?key_id=${keyId}&limit=1000`)).body.data;
    expect(records.filter((r: { request_id: string }) => r.request_id === last?.requestId)).toHaveLength(1);
    await nothingReserved(t, keyId);
    const exchange = hostile.exchangesOf(label)[0];
    const end = await eventually(() => (exchange?.end === "open" ? undefined : exchange?.end));
    if (["hang", "headers-hang", "trickle"].includes(behaviour)) expect(end).toBe("closed");
  });

  it.each([
    "hang",
    "invalid-json",
    "html-503",
    "cut-body",
    "trickle",
  ] as Misbehaviour[])("failover, TEI embeddings, %s on the first machine: the second one answers", async (behaviour) => {
    hostile.behave(TEI_BAD, behaviour);
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 100 } });
    // A failure may have opened the hostile machine's circuit: the probe closes it again.
    await eventually(async () => ((await machineView(t, TEI_BAD)).state === "up" ? true : undefined));
    const before = hostile.exchangesOf(TEI_BAD).length;
    let last: { requestId: string } | undefined;
    for (let i = 0; i < 4 && hostile.exchangesOf(TEI_BAD).length === before; i++) {
      const seen = await send(t, key, "tei-embed", EMBEDDING, false);
      expect(seen.status).toBe(200);
      expect(seen.ms).toBeLessThan(ANSWER_BOUND_MS);
      expect(seen.json.data).toHaveLength(2);
      last = seen;
    }
    expect(hostile.exchangesOf(TEI_BAD)).toHaveLength(before + 1);
    if (!last) throw new Error("no request");
    expect(await usageRecord(t, keyId, last.requestId)).toMatchObject({ outcome: "ok", machine: "good-tei" });
    await nothingReserved(t, keyId);
  });
});
