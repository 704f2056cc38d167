import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The suite's longest files (whole Zona processes, a browser, fault experiments that wait on
 * purpose), longest first. Vitest orders a run by the durations it remembers in node_modules, which a
 * fresh install (CI) does not have: by file size instead, these would start last and the run would
 * end with one worker busy for minutes while the other idles. A file missing here only starts later.
 */
const LONGEST = [
  "test/faults/hostile-documents.test.ts",
  "test/knowledge/document-reader.test.ts",
  "test/faults/crash-under-load.test.ts",
  "test/cli/direct-mode.test.ts",
  "test/security/lookup-timing.test.ts",
  "test/web/web-audio.test.ts",
  "test/web/web-auth.test.ts",
  "test/faults/slow-clients.test.ts",
  "test/faults/stream-backpressure.test.ts",
  "test/web/web-kb.test.ts",
  "test/config/reload.test.ts",
  "test/images/image-placement.test.ts",
  "test/cli/keys-update.test.ts",
  "test/store/pglite-thread.test.ts",
  "test/faults/postgres-restart.test.ts",
];

/** Runs the longest files first, then the others in Vitest's own order. */
export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const index = LONGEST.findIndex((path) => file.moduleId.endsWith(path));
      return index === -1 ? LONGEST.length : index;
    };
    // Array.prototype.sort is stable: the others keep Vitest's order.
    return ordered.sort((a, b) => rank(a) - rank(b));
  }
}
