import { randomBytes } from "node:crypto";
import { FakeOpenAiServer } from "../../test/fakes/fake-openai-server.ts";
import { FakeTeiServer } from "../../test/fakes/fake-tei-server.ts";
import { type CrashOptions, type CrashSetup, setUpCrash } from "../../test/faults/crash-setup.ts";
import { createTestDatabase } from "../../test/helpers/test-store.ts";

/** A Zona of a fault experiment with its fake engines, and how to take it all down. */
export interface FaultInstallation {
  setup: CrashSetup;
  distributed: boolean;
  close(): Promise<void>;
}

/**
 * Starts a Zona with a chat and an embedding fake engine: embedded in a fresh data folder, or
 * distributed when DATABASE_URL and REDIS_URL are set (in a fresh database it creates and drops).
 */
export async function startFaultInstallation(
  name: string,
  installation: Omit<CrashOptions, "embeddingUrl" | "redisPrefix"> = {},
): Promise<FaultInstallation> {
  const databaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  // createTestDatabase makes a database of its own on the server TEST_DATABASE_URL names.
  if (databaseUrl) process.env.TEST_DATABASE_URL = databaseUrl;
  const database = databaseUrl && redisUrl ? await createTestDatabase() : undefined;
  const tei = new FakeTeiServer();
  const chat = new FakeOpenAiServer();
  const embeddingUrl = (await tei.start()).url;
  const engineUrl = (await chat.start()).url;
  const setup = await setUpCrash({
    engineUrl,
    prepaid: false,
    ...(database && redisUrl ? { shared: { databaseUrl: database.url, redisUrl } } : {}),
    installation: { ...installation, embeddingUrl, redisPrefix: `${name}-${randomBytes(4).toString("hex")}` },
  });
  return {
    setup,
    distributed: database !== undefined,
    async close() {
      await setup.zona.stop();
      setup.remove();
      await tei.close();
      await chat.close();
      await database?.drop();
    },
  };
}

/** The value below which a share `p` of the values lie. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}
