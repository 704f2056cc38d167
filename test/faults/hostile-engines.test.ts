import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostileEngineServer, type Misbehaviour } from "../fakes/hostile-engine-server.ts";
import type { TestApp } from "../helpers/test-app.ts";
import {
  ANSWER_BOUND_MS,
  ENDPOINTS,
  type Endpoint,
  eventually,
  expectedOf,
  expectShape,
  hostileMachine,
  nothingReserved,
  pricedModel,
  send,
  startHostileApp,
  usageRecord,
} from "./hostile-fixtures.ts";

// Endless and huge bodies are measured one at a time in hostile-engines-memory.test.ts.
const WHOLE: Misbehaviour[] = [
  "well",
  "hang",
  "headers-hang",
  "cut-body",
  "invalid-json",
  "end-mid-event",
  "trickle",
  "html-500",
  "html-503",
];
const STREAMED: Misbehaviour[] = [
  "well",
  "hang",
  "headers-hang",
  "cut-body",
  "invalid-json",
  "no-data-prefix",
  "bad-event-mid",
  "long-line",
  "no-done",
  "end-mid-event",
  "trickle",
  "html-500",
  "html-503",
];
/** Misbehaviours where the server never ends the answer itself: Zona must hang up. */
const SERVER_NEVER_ENDS: ReadonlySet<Misbehaviour> = new Set(["hang", "headers-hang", "trickle"]);
const TEXT_ENDPOINTS: Endpoint[] = ["openai-chat", "openai-completions", "ollama-chat", "ollama-generate"];

interface Case {
  title: string;
  endpoint: Endpoint;
  behaviour: Misbehaviour;
  stream: boolean;
  /** The machine (and the model it alone serves): one per case, so that no breaker is shared. */
  label: string;
}

const cases: Case[] = TEXT_ENDPOINTS.flatMap((endpoint) =>
  [false, true].flatMap((stream) =>
    (stream ? STREAMED : WHOLE)
      // NDJSON has no `data:` prefix to leave out.
      .filter((behaviour) => !(behaviour === "no-data-prefix" && ENDPOINTS[endpoint].protocol === "ollama"))
      .map((behaviour) => {
        const label = `${endpoint}-${behaviour}-${stream ? "s" : "n"}`;
        const expected = expectedOf(behaviour, stream);
        return {
          title: `${endpoint} ${stream ? "stream" : "whole"} ${behaviour}: ${expected}`,
          endpoint,
          behaviour,
          stream,
          label,
        };
      }),
  ),
);

interface Figure {
  label: string;
  status: number;
  ms: number;
  upstreamEnd: string;
}
const figures: Figure[] = [];

describe("hostile engines: every misbehaviour of an OpenAI-style and an Ollama engine, streamed and not, gives a clear error in bounded time, releases the reservation and closes the upstream", () => {
  const hostile = new HostileEngineServer();
  let t: TestApp;

  beforeAll(async () => {
    await hostile.start();
    for (const { label, behaviour } of cases) hostile.behave(label, behaviour);
    t = await startHostileApp({
      models: cases.map(({ label }) => pricedModel(label, "chat")),
      machines: cases.map(({ label, endpoint }) =>
        hostileMachine(hostile, label, ENDPOINTS[endpoint].protocol, [label]),
      ),
    });
  });

  afterAll(async () => {
    await t?.close();
    await hostile.close();
    const by = (stream: boolean) => figures.filter((f) => f.label.endsWith(stream ? "-s" : "-n"));
    const max = (list: Figure[]) => Math.round(Math.max(0, ...list.map((f) => f.ms)));
    console.info(
      `hostile engines: ${figures.length} cases; slowest answer ${max(by(false))} ms (whole), ${max(by(true))} ms (streams); statuses ${JSON.stringify(countBy(figures.map((f) => f.status)))}; upstream ends ${JSON.stringify(countBy(figures.map((f) => f.upstreamEnd)))}`,
    );
  });

  it.concurrent.each(cases)("$title", async ({ endpoint, behaviour, stream, label }) => {
    const { key, keyId } = await t.newKey({ key: { monthly_limit: 100 } });
    const expected = expectedOf(behaviour, stream);

    const seen = await send(t, key, endpoint, label, stream);
    expect(seen.ms).toBeLessThan(ANSWER_BOUND_MS);
    expectShape(seen, expected, behaviour === "cut-body");

    // Money: one record per request; a failure costs nothing and holds nothing afterwards.
    const record = await usageRecord(t, keyId, seen.requestId);
    if (expected === "ok") expect(record).toMatchObject({ outcome: "ok", machine: label });
    else expect(record).toMatchObject({ outcome: "failed", cost: 0 });
    await nothingReserved(t, keyId);

    // The upstream: asked once (one machine), and its answer is over, by Zona hanging up if the server never ends it.
    const exchanges = hostile.exchangesOf(label);
    expect(exchanges).toHaveLength(1);
    const exchange = exchanges[0];
    if (!exchange) throw new Error("no exchange");
    const end = await eventually(() => (exchange.end === "open" ? undefined : exchange.end));
    if (SERVER_NEVER_ENDS.has(behaviour)) expect(end).toBe("closed");
    figures.push({ label, status: seen.status, ms: seen.ms, upstreamEnd: end });
  });

  it("after all cases no upstream answer is left open", async () => {
    await eventually(() => (hostile.openExchanges().length === 0 ? true : undefined));
    expect(hostile.exchanges.length).toBe(cases.length);
  });
});

function countBy(values: Array<string | number>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[String(value)] = (counts[String(value)] ?? 0) + 1;
  return counts;
}
