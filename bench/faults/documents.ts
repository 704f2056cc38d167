// The hostile-document corpus at full size through a real Zona: `npm run faults:documents`.
// Embedded (a fresh data folder), or distributed with DATABASE_URL and REDIS_URL set (a fresh
// database). READ_TIMEOUT_SECONDS (120, the default of the configuration) caps each reading.
import { runHostileDocuments } from "../../test/faults/hostile-documents-run.ts";
import { hostileDocuments } from "../../test/knowledge/hostile-documents.ts";
import { percentile, startFaultInstallation } from "./fault-installation.ts";

async function main(): Promise<void> {
  const { setup, distributed, close } = await startFaultInstallation("documents", {
    knowledge: { read_timeout_seconds: Number(process.env.READ_TIMEOUT_SECONDS ?? 120) },
  });
  try {
    const started = performance.now();
    const result = await runHostileDocuments(setup, hostileDocuments());
    console.log(
      `${distributed ? "distributed" : "embedded"}: the whole corpus in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    for (const { document, state } of result.results) {
      const took = (Date.parse(state.updated_at) - Date.parse(state.created_at)) / 1000;
      console.log(
        `  ${document.name} (${(document.bytes.length / 1024).toFixed(0)} KB): ${state.status} after ${took.toFixed(1)} s${state.error ? ` — ${state.error}` : ""}`,
      );
    }
    console.log(
      `  the same process throughout: ${setup.zona.pid === result.pid}; heap out of memory in its output: ${/heap out of memory/.test(setup.zona.output)}`,
    );
    console.log(
      `  /healthz: p50 ${percentile(result.waits, 0.5).toFixed(1)} ms, max ${Math.max(...result.waits).toFixed(1)} ms over ${result.waits.length} probes`,
    );
    console.log(
      `  another user's GET /api/v1/chat/sessions: p50 ${percentile(result.otherWaits, 0.5).toFixed(1)} ms, p99 ${percentile(result.otherWaits, 0.99).toFixed(1)} ms, max ${Math.max(...result.otherWaits).toFixed(1)} ms`,
    );
    console.log(
      `  Zona RSS after the readable texts ${result.rssBefore.toFixed(0)} MB, after the hostile documents ${result.rssAfter.toFixed(0)} MB`,
    );
  } finally {
    await close();
  }
}

await main();
