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
    // Three workers on two cores, each file in the worker's module graph (not a fresh one per file):
    // much of the suite waits (on purpose: limits, stalls, restarts), and re-importing the service for
    // each of 190 files cost about 4 of a run's 17 minutes. Measured on the 2-core machine: 1,022 s
    // with two isolated workers, 888 s with three, 775 s with three sharing modules. A test that
    // changes module state (the scrypt cost) sets what it needs itself.
    maxWorkers: 3,
    isolate: false,
    sequence: { sequencer: LongestFirstSequencer },
  },
});
