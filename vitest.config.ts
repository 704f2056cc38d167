import { defineConfig } from "vitest/config";
import LongestFirstSequencer from "./test/longest-first-sequencer.ts";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // A run folder for the logs of every test app, scanned for secrets and users' texts at the end.
    globalSetup: ["test/logs/global-setup.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers only make the PGlite start-ups fight each other.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirstSequencer },
  },
});
