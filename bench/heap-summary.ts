// Where Zona allocates, per answer, from a sampling allocation profile
// (BENCH_PROFILE=<dir> BENCH_PROFILE_KIND=heap npm run bench):
//   npx node bench/heap-summary.ts <file.heapprofile> <answers> [top]
// Bytes are grouped by where the allocating code comes from (Zona's own src/, a package, Node) and
// the functions that allocate most are listed, with the Zona function that called into them.
import { readFileSync } from "node:fs";
import { packageOf, shortUrl, zonaFolderOf } from "./profile-origin.ts";

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

const [file, answersText, topText] = process.argv.slice(2);
const answers = Number(answersText);
if (!file || !(answers > 0)) {
  process.stderr.write("usage: npx node bench/heap-summary.ts <file.heapprofile> <answers> [top]\n");
  process.exit(2);
}
const top = Number(topText ?? 30);
const profile = JSON.parse(readFileSync(file, "utf8")) as { head: HeapNode };

const groups = new Map<string, number>();
const functions = new Map<string, number>();
let total = 0;
const walk = (node: HeapNode, zonaCaller: string) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = `${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`;
  const caller = url.includes("/src/") ? name : zonaCaller;
  if (node.selfSize > 0) {
    total += node.selfSize;
    const group = groupOf(url);
    groups.set(group, (groups.get(group) ?? 0) + node.selfSize);
    const key = caller && caller !== name ? `${name} ← ${caller}` : name;
    functions.set(key, (functions.get(key) ?? 0) + node.selfSize);
  }
  for (const child of node.children) walk(child, caller);
};
walk(profile.head, "");

const print = (title: string, entries: Map<string, number>, limit: number) => {
  process.stdout.write(`\n${title}\n\n| Share | bytes per answer | Where |\n| ---: | ---: | --- |\n`);
  for (const [name, bytes] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, limit)) {
    const share = ((bytes / total) * 100).toFixed(1);
    process.stdout.write(
      `| ${share} % | ${Math.round(bytes / answers)} | ${name.replaceAll("|", "\\|")} |\n`,
    );
  }
};
process.stdout.write(`${Math.round(total / answers)} bytes allocated per answer (${answers} answers)\n`);
print("By origin", groups, 20);
print("By function (and the Zona function it ran for)", functions, top);

function groupOf(url: string): string {
  if (url === "") return "(native or V8)";
  if (url.startsWith("node:")) return "node";
  const pkg = packageOf(url);
  if (pkg) return pkg;
  const src = zonaFolderOf(url);
  return src ? `src/${src}` : shortUrl(url);
}
