// What garbage collection cost per answer, from a GC profile
// (BENCH_PROFILE=<dir> BENCH_PROFILE_KIND=gc npm run bench):
//   npx node bench/gc-summary.ts <file.gcprofile.json> <answers>
// Per kind of collection: how many per thousand answers, their time on the main thread per answer
// (the collector's helper threads are not in it), and per answer what moved into the old generation
// during scavenges (promoted) and what the full collections freed there.
import { readFileSync } from "node:fs";

interface SpaceStats {
  spaceName: string;
  spaceUsedSize: number;
}
interface GcEvent {
  gcType: string;
  cost: number;
  beforeGC: { heapSpaceStatistics: SpaceStats[] };
  afterGC: { heapSpaceStatistics: SpaceStats[] };
}

const [file, answersText] = process.argv.slice(2);
const answers = Number(answersText);
if (!file || !(answers > 0)) {
  process.stderr.write("usage: npx node bench/gc-summary.ts <file.gcprofile.json> <answers>\n");
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, "utf8")) as { statistics: GcEvent[] };

const used = (spaces: SpaceStats[], names: string[]) =>
  spaces
    .filter((space) => names.includes(space.spaceName))
    .reduce((sum, space) => sum + space.spaceUsedSize, 0);
const OLD = ["old_space", "large_object_space"];
const NEW = ["new_space", "new_large_object_space"];

const kinds = new Map<string, { count: number; micros: number; oldDelta: number; survived: number }>();
for (const event of profile.statistics) {
  const seen = kinds.get(event.gcType) ?? { count: 0, micros: 0, oldDelta: 0, survived: 0 };
  seen.count += 1;
  seen.micros += event.cost;
  const before = event.beforeGC.heapSpaceStatistics;
  const after = event.afterGC.heapSpaceStatistics;
  seen.oldDelta += used(after, OLD) - used(before, OLD);
  seen.survived += used(after, NEW);
  kinds.set(event.gcType, seen);
}
process.stdout.write(
  `${answers} answers\n\n| Kind | per 1,000 answers | main-thread us each | main-thread us per answer | old generation grew, bytes per answer | young generation kept, KB each |\n| --- | ---: | ---: | ---: | ---: | ---: |\n`,
);
for (const [kind, { count, micros, oldDelta, survived }] of kinds) {
  const cells = [
    ((count / answers) * 1000).toFixed(2),
    Math.round(micros / count),
    (micros / answers).toFixed(1),
    Math.round(oldDelta / answers),
    Math.round(survived / count / 1024),
  ];
  process.stdout.write(`| ${kind} | ${cells.join(" | ")} |\n`);
}
