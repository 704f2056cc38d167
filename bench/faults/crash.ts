// `kill -9` of Zona under sustained load, at full size: `npm run faults:crash`. No usage record of a
// delivered answer may be lost.
// CRASH_REQUESTS (10,000), CRASH_KILLS (10), CRASH_CONCURRENCY (32); with DATABASE_URL and REDIS_URL
// set it runs distributed against them (in a fresh database it creates and drops), else embedded.
import { writeFileSync } from "node:fs";
import { runCrashExperiment } from "../../test/faults/crash-experiment.ts";
import { createTestDatabase } from "../../test/helpers/test-store.ts";

const requests = Number(process.env.CRASH_REQUESTS ?? 10_000);
const kills = Number(process.env.CRASH_KILLS ?? 10);
const concurrency = Number(process.env.CRASH_CONCURRENCY ?? 32);
const out = process.env.CRASH_OUT;

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  // createTestDatabase makes a database of its own on the server TEST_DATABASE_URL names.
  if (databaseUrl) process.env.TEST_DATABASE_URL = databaseUrl;
  const database = databaseUrl && redisUrl ? await createTestDatabase() : undefined;
  const reports = [];
  try {
    for (const prepaid of [false, true]) {
      const report = await runCrashExperiment({
        requests,
        kills,
        concurrency,
        prepaid,
        seed: prepaid ? 2 : 1,
        ...(database && redisUrl ? { shared: { databaseUrl: database.url, redisUrl } } : {}),
      });
      const { load, audit } = report;
      reports.push(report);
      console.log(
        [
          `${report.storage}, ${prepaid ? "prepaid" : "postpaid"}: ${load.sent} requests in ${(load.durationMs / 1000).toFixed(1)} s, ${load.kills} kills (restarts ${load.restartMs.map((ms) => Math.round(ms)).join(", ")} ms)`,
          `  answers received whole: ${load.completed.length} (${load.completed.filter((c) => c.stream).length} streams); 402: ${load.refused}; broken by a kill or refused while down: ${load.broken}; other: ${JSON.stringify(load.otherStatuses)}`,
          `  usage records: ${audit.usageRecords} ${JSON.stringify(audit.outcomes)}; whole answers with their record: ${audit.completedWithRecord}`,
          `  lost records: ${audit.completedWithoutRecord.length}; not billed: ${audit.completedNotBilled.length}; held after the sweep: ${audit.heldReservations} (swept ${(report.sweptAfterMs / 1000).toFixed(1)} s after the last kill)`,
          `  key spend mismatches: ${audit.keySpendMismatches.length}; overspent keys: ${audit.overspentKeys.length}; credit mismatches: ${audit.creditMismatches.length}; ledger mismatches: ${audit.ledgerMismatches.length}`,
        ].join("\n"),
      );
      for (const problem of [
        ...audit.keySpendMismatches,
        ...audit.overspentKeys,
        ...audit.creditMismatches,
        ...audit.ledgerMismatches,
      ])
        console.log(`  ! ${problem}`);
    }
  } finally {
    await database?.drop();
  }
  if (out) {
    const slim = reports.map(({ load: { completed, ...load }, audit, ...rest }) => ({
      ...rest,
      load: { ...load, completed: completed.length },
      audit: {
        ...audit,
        completedWithoutRecord: audit.completedWithoutRecord.length,
        completedNotBilled: audit.completedNotBilled.length,
      },
    }));
    writeFileSync(out, `${JSON.stringify(slim, null, 2)}\n`);
  }
  const lost = reports.some(
    ({ audit }) =>
      audit.completedWithoutRecord.length +
        audit.completedNotBilled.length +
        audit.heldReservations +
        audit.keySpendMismatches.length +
        audit.overspentKeys.length +
        audit.creditMismatches.length +
        audit.ledgerMismatches.length >
      0,
  );
  process.exit(lost ? 1 : 0);
}

await main();
