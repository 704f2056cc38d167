import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { type ErrorData, errorFrom } from "./thread-messages.ts";

const SCRIPT = fileURLToPath(new URL("./migrate-process.ts", import.meta.url));

/**
 * Creates (first start) and migrates a PGlite data folder in a short-lived process
 * (`migrate-process.ts`), so that the memory this takes leaves with it. Rejects with the
 * migration's own error (a SQL error keeps its PostgreSQL fields).
 */
export function migrateInOwnProcess(dataDir: string, sharedBuffers: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [SCRIPT, dataDir, sharedBuffers],
      { maxBuffer: 1024 * 1024 },
      (error, _out, err) => {
        if (!error) return resolve();
        const last = err.trim().split("\n").pop() ?? "";
        try {
          reject(errorFrom(JSON.parse(last) as ErrorData));
        } catch {
          reject(new Error(`the migration process failed: ${err.trim() || error.message}`));
        }
      },
    );
  });
}
