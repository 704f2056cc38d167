import { count, eq } from "drizzle-orm";
import { reservations, usageRecords } from "../../src/store/schema.ts";
import { type AppUserHandle, signedInUser } from "../app/app-helpers.ts";
import { FakeOpenAiServer, FakeTeiServer, FakeWhisperServer } from "../fakes/index.ts";
import { startTestApp, type TestApp } from "../helpers/test-app.ts";

/** The chat model of the stack. */
export const CHAT_MODEL = "gemma3.8-27b";

/** One zone with a chat machine, a transcription machine and an embeddings machine, for clients that misbehave. */
export interface FaultStack {
  t: TestApp;
  port: number;
  /** A key of the key API (its account has no limits that a test could reach). */
  key: string;
  keyId: string;
  /** The account of the key. */
  keyAccount: string;
  whisper: FakeWhisperServer;
  /** The chat machine, when the stack made it (not when a test gave its own engine's url). */
  chat: FakeOpenAiServer | undefined;
  /** A new signed-in user of the app API, with a knowledge base; each has its own per-user limits. */
  user(): Promise<AppUserHandle & { kb: string }>;
  /** Reservations not settled nor released, of every account. */
  reservationsHeld(): Promise<number>;
  /** How many usage records a key has, by outcome. */
  outcomesOf(keyId: string): Promise<Record<string, number>>;
  /** The usage records of an account. */
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
  usageOf(accountId: string): Promise<any[]>;
  close(): Promise<void>;
}

/** Starts the fakes and the app; `chatUrl` replaces the stack's own chat machine. */
export async function startFaultStack(options: { chatUrl?: string } = {}): Promise<FaultStack> {
  const whisper = new FakeWhisperServer();
  const tei = new FakeTeiServer();
  const chat = options.chatUrl === undefined ? new FakeOpenAiServer() : undefined;
  const [w, e, c] = await Promise.all([whisper.start(), tei.start(), chat?.start()]);
  const chatUrl = options.chatUrl ?? c?.url ?? "";
  const t = await startTestApp({
    config: {
      installation: { zones: [{ id: "ch-ti" }] },
      tiers: { slow: { multiplier: 1, requests_per_minute: 1_000_000 } },
      rate_limits: {
        endpoint_limits: { audio_transcriptions: 1_000_000, chat_completions: 1_000_000 },
      },
      prices: { transcription_per_second: 0.001 },
      models: [
        {
          id: CHAT_MODEL,
          kind: "chat",
          prices: { input_per_million_tokens: 1, output_per_million_tokens: 2 },
        },
        { id: "asr-1", kind: "asr" },
        { id: "bge-m3", kind: "embedding" },
      ],
      machines: [
        { name: "ti-chat", zone: "ch-ti", protocol: "openai", url: chatUrl, models: [CHAT_MODEL] },
        { name: "ti-whisper", zone: "ch-ti", protocol: "whisper", url: w.url, models: ["asr-1"] },
        { name: "ti-tei", zone: "ch-ti", protocol: "tei", url: e.url, models: ["bge-m3"] },
      ],
    },
  });
  const { key, keyId, accountId } = await t.newKey();
  return {
    t,
    port: Number(new URL(t.url).port),
    key,
    keyId,
    keyAccount: accountId,
    whisper,
    chat,
    async user() {
      const user = await signedInUser(t);
      const base = await user.post("/rag/kb", { name: "Faults" });
      if (base.status !== 201) throw new Error(`base: ${base.status} ${await base.text()}`);
      return { ...user, kb: ((await base.json()) as { slug: string }).slug };
    },
    async reservationsHeld() {
      const [row] = await t.store.db.select({ held: count() }).from(reservations);
      return row?.held ?? 0;
    },
    async outcomesOf(keyId) {
      await t.app.services.billing.drain();
      const rows = await t.store.db
        .select({ outcome: usageRecords.outcome, records: count() })
        .from(usageRecords)
        .where(eq(usageRecords.keyId, keyId))
        .groupBy(usageRecords.outcome);
      return Object.fromEntries(rows.map((row) => [row.outcome, row.records]));
    },
    async usageOf(accountId) {
      await t.app.services.billing.drain();
      return (await t.admin("GET", `/usage?account_id=${accountId}&limit=100`)).body.data;
    },
    async close() {
      await t.close();
      await Promise.all([w.close(), e.close(), c?.close()]);
    },
  };
}
