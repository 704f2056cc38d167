// Where Zona's CPU time went, from a V8 CPU profile (BENCH_PROFILE=<dir> npm run bench):
//   npx node bench/profile-summary.ts <file.cpuprofile> [top]
// Self time is grouped by where the code comes from (PGlite, Fastify, Zona's own src/, ...) and
// the functions with the most self time are listed.
import { readFileSync } from "node:fs";
import { packageOf, shortUrl, zonaFolderOf } from "./profile-origin.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const file = process.argv[2];
if (!file) {
  process.stderr.write("usage: npx node bench/profile-summary.ts <file.cpuprofile> [top]\n");
  process.exit(2);
}
const top = Number(process.argv[3] ?? 25);
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, ProfileNode>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node);
const selfMicros = new Map<number, number>();
profile.samples.forEach((id, i) => {
  selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

const groups = new Map<string, number>();
const functions = new Map<string, number>();
let total = 0;
let idle = 0;
for (const [id, micros] of selfMicros) {
  const node = byId.get(id);
  if (!node) continue;
  const group = node.callFrame.url.startsWith("wasm://") ? wasmGroupOf(node) : groupOf(node.callFrame);
  if (group === "idle") {
    idle += micros;
    continue;
  }
  total += micros;
  groups.set(group, (groups.get(group) ?? 0) + micros);
  const { functionName, url, lineNumber } = node.callFrame;
  const name = `${functionName || "(anonymous)"} ${shortUrl(url)}:${lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + micros);
}

const print = (title: string, entries: Map<string, number>, limit: number) => {
  process.stdout.write(`\n${title}\n\n| Share | ms | Where |\n| ---: | ---: | --- |\n`);
  for (const [name, micros] of [...entries].sort((a, b) => b[1] - a[1]).slice(0, limit)) {
    const share = ((micros / total) * 100).toFixed(1);
    process.stdout.write(`| ${share} % | ${(micros / 1000).toFixed(0)} | ${name.replaceAll("|", "\\|")} |\n`);
  }
};
process.stdout.write(`busy ${(total / 1e6).toFixed(1)} s, idle ${(idle / 1e6).toFixed(1)} s (${file})\n`);
print("Self time by origin (share of busy time)", groups, 30);
print(`Top ${top} functions by self time`, functions, top);

function groupOf(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (functionName === "(idle)") return "idle";
  if (functionName === "(garbage collector)") return "garbage collector";
  if (functionName === "(program)") return "(program: V8 and native code outside JS)";
  const module = packageOf(url);
  if (module) return module.startsWith("@electric-sql/pglite") ? "PGlite: JavaScript side" : module;
  if (url.startsWith("node:")) return "Node core (http, net, streams, ...)";
  const own = zonaFolderOf(url);
  if (own) return `Zona src/${own}/`;
  if (/\/src\/[^/]+$/.test(url)) return "Zona src/";
  return url === "" ? `native: ${functionName}` : url;
}

/**
 * WebAssembly frames carry no module: they are named by the JavaScript that called them (PGlite's
 * PostgreSQL, or undici's HTTP parser, llhttp, which a distributed Zona runs for every engine answer).
 */
function wasmGroupOf(node: ProfileNode): string {
  for (let caller = parentOf.get(node.id); caller; caller = parentOf.get(caller.id)) {
    const { url } = caller.callFrame;
    if (url === "" || url.startsWith("wasm://")) continue;
    if (url.includes("@electric-sql/pglite")) return "PGlite: PostgreSQL compiled to WebAssembly";
    if (url.includes("node_modules/undici/")) return "undici: llhttp, its HTTP parser in WebAssembly";
    return `WebAssembly called from ${shortUrl(url)}`;
  }
  return "WebAssembly";
}
