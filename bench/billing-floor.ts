// The cost of the database work of a billed request whose key has a monthly limit (or any key on a
// prepaid installation), without HTTP: the reserve and settle transactions of the billing service
// (which write the usage record), one after the other and 16
// at a time, on embedded PGlite in a data dir (as `zona` runs) and in memory. Prints one line of
// JSON. bench/gateway.ts runs it on Zona's core once Zona has stopped; alone:
//   taskset -c 0 npx node bench/billing-floor.ts [requests]
import { join } from "node:path";
import { parseConfig } from "../src/config/load.ts";
import type { KeyPrincipal } from "../src/services/api-keys.ts";
import { createServices } from "../src/services/create-services.ts";
import { openStore, type StoreOptions } from "../src/store/open-store.ts";
import { cleanUp, tempDir } from "./children.ts";
import { Samples } from "./stats.ts";

/** What one store did. */
export interface FloorResult {
  store: "pglite-data-dir" | "pglite-memory";
  requests: number;
  /** One request at a time: wall time of reserve + settle. */
  sequentialP50Ms: number;
  sequentialP99Ms: number;
  /** CPU time of this process per reserve + settle, one at a time. */
  cpuMsPerRequest: number;
  /** Reserve + settle pairs per second, one at a time and 16 at a time. */
  sequentialPerSecond: number;
  concurrent16PerSecond: number;
  /** RSS of this process just before and just after the store was opened (clean for the first store only). */
  rssBeforeOpenMb: number;
  rssAfterOpenMb: number;
}

const MODEL = "bench-chat";

async function measure(kind: FloorResult["store"], requests: number): Promise<FloorResult> {
  const config = parseConfig({
    installation: { zones: [{ id: "bench" }] },
    models: [
      { id: MODEL, kind: "chat", prices: { input_per_million_tokens: 0.6, output_per_million_tokens: 2.4 } },
    ],
  });
  const options: StoreOptions =
    kind === "pglite-memory" ? { memory: true } : { dataDir: join(tempDir("zona-floor-"), "data") };
  const rssBeforeOpenMb = rss();
  const store = await openStore(options);
  const rssAfterOpenMb = rss();
  try {
    const services = createServices(config, store);
    const account = await services.accounts.create({ email: `floor-${kind}@example.com` });
    const { row } = await services.keys.create(account.id, { name: "floor" });
    const principal: KeyPrincipal = {
      keyId: row.id,
      accountId: account.id,
      keyName: row.name,
      zones: null,
      // A key with a monthly limit: the path that reserves in one transaction and settles in
      // another (a key without a limit on a postpaid installation only queues its usage record).
      monthlyLimitMicros: 1_000_000_000_000,
    };
    let serial = 0;
    const once = async () => {
      const reservation = await services.billing.reserve({
        requestId: `req_floor_${kind}_${serial++}`,
        principal,
        endpoint: "chat.completions",
        model: MODEL,
        maxCostMicros: 120,
      });
      await reservation.settle({
        costMicros: 60,
        units: { input_tokens: 12, output_tokens: 16 },
        zone: "bench",
        machine: "fake-engine",
      });
    };
    for (let i = 0; i < 50; i++) await once();

    const latencies = new Samples();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < requests; i++) {
      const t0 = performance.now();
      await once();
      latencies.add(performance.now() - t0);
    }
    const sequentialS = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);

    let left = requests;
    const concurrentStart = performance.now();
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (left-- > 0) await once();
      }),
    );
    const concurrentS = (performance.now() - concurrentStart) / 1000;
    const [p50, p99] = latencies.percentiles(50, 99);
    return {
      store: kind,
      requests,
      sequentialP50Ms: p50 ?? Number.NaN,
      sequentialP99Ms: p99 ?? Number.NaN,
      cpuMsPerRequest: Math.round(((cpu.user + cpu.system) / 1000 / requests) * 1000) / 1000,
      sequentialPerSecond: Math.round(requests / sequentialS),
      concurrent16PerSecond: Math.round(requests / concurrentS),
      rssBeforeOpenMb,
      rssAfterOpenMb,
    };
  } finally {
    await store.close();
  }
}

function rss(): number {
  return Math.round(process.memoryUsage().rss / 2 ** 20);
}

const requests = Number(process.argv[2] ?? 500);
try {
  const results = [await measure("pglite-data-dir", requests), await measure("pglite-memory", requests)];
  process.stdout.write(`${JSON.stringify(results)}\n`);
} finally {
  await cleanUp();
}
