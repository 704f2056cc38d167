import { openStore } from "../../src/store/open-store.ts";
import { FakeOpenAiServer } from "../fakes/index.ts";
import { auditCrash, type CrashAudit } from "./crash-audit.ts";
import { type CompletedAnswer, type LoadOutcome, loadWithKills } from "./crash-load.ts";
import { type CrashSetup, HOLD_SECONDS, setUpCrash } from "./crash-setup.ts";

/** One run of the experiment: what the clients saw and what the database holds. */
export interface CrashReport {
  storage: "embedded" | "distributed";
  prepaid: boolean;
  load: LoadOutcome;
  /** How long after the last kill the restarted Zona had given back every reservation, in ms. */
  sweptAfterMs: number;
  audit: CrashAudit;
}

/**
 * `kill -9` of a Zona process at random moments of a sustained load: the load, then a
 * restart once the dead processes' reservations have expired, whose sweep gives them back; then a
 * graceful stop and an audit of the database against every answer a client received whole.
 */
export async function runCrashExperiment(options: {
  requests: number;
  kills: number;
  concurrency: number;
  prepaid: boolean;
  seed: number;
  /** PostgreSQL and Redis (distributed mode); the embedded default without. */
  shared?: { databaseUrl: string; redisUrl: string };
}): Promise<CrashReport> {
  const engine = new FakeOpenAiServer({ chunkDelayMs: 1 });
  const started = await engine.start();
  let setup: CrashSetup | undefined;
  try {
    setup = await setUpCrash({
      engineUrl: started.url,
      prepaid: options.prepaid,
      ...(options.shared ? { shared: options.shared } : {}),
    });
    const load = await loadWithKills({ ...options, zona: setup.zona, keys: setup.keys });
    const { sweptAfterMs, audit } = await sweepThenAudit(setup, load.completed, options.shared);
    return {
      storage: options.shared ? "distributed" : "embedded",
      prepaid: options.prepaid,
      load,
      sweptAfterMs,
      audit,
    };
  } finally {
    await setup?.zona.kill9();
    setup?.remove();
    await started.close();
  }
}

/**
 * After a fault: a graceful stop, a start once the dead requests' reservations have expired (a start
 * sweeps at once), a wait until nothing is held, a stop, then the audit of the database.
 */
export async function sweepThenAudit(
  setup: CrashSetup,
  completed: CompletedAnswer[],
  shared: { databaseUrl: string } | undefined,
): Promise<{ sweptAfterMs: number; audit: CrashAudit }> {
  const faultEnded = performance.now();
  await setup.zona.stop();
  await new Promise((resolve) => setTimeout(resolve, HOLD_SECONDS * 1000 + 500));
  await setup.zona.start();
  await waitUntilNothingHeld(setup);
  const sweptAfterMs = performance.now() - faultEnded;
  await setup.zona.stop();
  const store = await openStore(shared ? { databaseUrl: shared.databaseUrl } : { dataDir: dataDirOf(setup) });
  try {
    return { sweptAfterMs, audit: await auditCrash(store, { ...setup, completed }) };
  } finally {
    await store.close();
  }
}

function dataDirOf(setup: CrashSetup): string {
  if (!setup.dataDir) throw new Error("an embedded run has a data folder");
  return setup.dataDir;
}

/** Polls the operator API until no key and no account holds money, for at most 15 s. */
async function waitUntilNothingHeld(setup: CrashSetup): Promise<void> {
  const get = async (path: string) => {
    const response = await fetch(`${setup.zona.url}/admin/v1${path}`, {
      headers: { authorization: `Bearer ${setup.adminToken}` },
    });
    return (await response.json()) as Record<string, unknown>;
  };
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    let held = 0;
    for (const key of setup.keys) {
      const summary = await get(`/usage/summary?key_id=${key.keyId}`);
      held += Number((summary.key_spend as { reserved?: number } | undefined)?.reserved ?? 0);
    }
    if (setup.prepaid) {
      for (const account of setup.accounts)
        held += Number((await get(`/accounts/${account.id}/credits`)).held ?? 0);
    }
    if (held === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
