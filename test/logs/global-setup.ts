import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describeFindings, scanLogFolder, testSecrets } from "../helpers/log-scan.ts";
import { RUN_LOG_DIR_ENV } from "../helpers/run-log.ts";
import { PGLITE_TEMPLATE_ENV, writePgliteTemplate } from "../helpers/test-store.ts";

/**
 * Vitest global setup: a folder for this run's logs, where every test app writes every line from
 * `trace` on (test/helpers/run-log.ts), and the PGlite template of the run's test stores. After the
 * last test file the teardown scans the logs (closeRun).
 */
export default async function setup(): Promise<() => Promise<void>> {
  const folder = await mkdtemp(join(tmpdir(), "zona-test-logs-"));
  // Test workers are started after this and inherit the environment.
  process.env[RUN_LOG_DIR_ENV] = folder;
  // One migrated PGlite database for the run, which every PGlite test store starts as a copy of
  // (test/helpers/test-store.ts); outside the log folder, which is scanned as text.
  const templateFolder = await mkdtemp(join(tmpdir(), "zona-test-pglite-"));
  const template = join(templateFolder, "template.tar");
  await writePgliteTemplate(template);
  process.env[PGLITE_TEMPLATE_ENV] = template;
  return async () => {
    delete process.env[RUN_LOG_DIR_ENV];
    delete process.env[PGLITE_TEMPLATE_ENV];
    await rm(templateFolder, { recursive: true, force: true });
    await closeRun(folder);
  };
}

/**
 * Scans every line of a run's logs for keys, bearer values, access and refresh tokens, mailed
 * tokens, the tests' passwords and operator tokens, and the canary of users' texts; removes the
 * folder; on any finding fails the run (exit code 1) and throws the list.
 */
export async function closeRun(folder: string): Promise<void> {
  try {
    const findings = await scanLogFolder(folder, await testSecrets(join(import.meta.dirname, "..")));
    if (findings.length > 0) {
      // Vitest only prints what a teardown throws ("error during close"); the exit code fails the run.
      process.exitCode = 1;
      throw new Error(
        `${findings.length} log line(s) of the test run hold a secret or a user's text:\n${describeFindings(findings.slice(0, 50))}`,
      );
    }
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
