import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

// The floors of docs/architecture.md, lowest first: a room may import its own files and the rooms
// of the floors below its own, never a room of its floor or above. A room is a folder of src/ (or
// one of its top-level files); the web client (src/web/client) is a program of its own: it speaks
// to the server over HTTP and shares only the app API's wire types (src/contract) with it.
const FLOORS: string[][] = [
  ["errors", "trace", "contract", "load-on-first-use.ts", "slots.ts", "require-node.ts"],
  ["config", "media"],
  ["store"],
  ["engines", "auth", "jobs", "mail"],
  ["metrics"],
  ["limits"],
  ["billing"],
  ["services"],
  ["http"],
  ["routes", "web"],
  ["app.ts", "cli"],
  ["main.ts"],
];
// The domain: every floor up to the services; the HTTP edge: every floor above.
const SERVICES_FLOOR = FLOORS.findIndex((rooms) => rooms.includes("services"));
const DOMAIN = FLOORS.slice(0, SERVICES_FLOOR + 1).flat();
const EDGE = FLOORS.slice(SERVICES_FLOOR + 1).flat();

const root = resolve(import.meta.dirname, "../..");
const src = join(root, "src");
const floorOf = new Map(FLOORS.flatMap((rooms, floor) => rooms.map((room) => [room, floor] as const)));

/** Every import of a source file that crosses from one room into another. */
function crossings(): Array<{ file: string; from: string; to: string; target: string }> {
  const found = [];
  for (const name of readdirSync(src, { recursive: true, encoding: "utf8" })) {
    if (!/\.tsx?$/.test(name) || name.endsWith(".d.ts")) continue;
    const file = join(src, name);
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      const target = relative(src, resolve(dirname(file), match[1] ?? ""));
      const from = roomOf(name);
      const to = roomOf(target);
      if (from !== to) found.push({ file: relative(root, file), from, to, target: `src/${target}` });
    }
  }
  return found;
}

const WEB_CLIENT = join("web", "client");

function roomOf(path: string): string {
  if (path.startsWith(WEB_CLIENT)) return WEB_CLIENT;
  return path.split(/[\\/]/)[0] ?? path;
}

describe("architecture: what may import what (docs/architecture.md, floors)", () => {
  const all = crossings();

  it("finds the imports it judges (the reader is not blind)", () => {
    expect(all.length).toBeGreaterThan(200);
    expect(all.some((c) => c.from === "routes" && c.to === "services")).toBe(true);
  });

  it("the web client imports nothing of the server but the app API's wire types (src/contract)", () => {
    const wrong = all.filter((c) => c.from === WEB_CLIENT && c.to !== "contract");
    expect(wrong.map((c) => `${c.file} -> ${c.target}`)).toEqual([]);
    expect(all.some((c) => c.from === WEB_CLIENT && c.to === "contract")).toBe(true);
  });

  it("every room of src/ is on a floor", () => {
    const rooms = new Set(all.flatMap((c) => [c.from, c.to]));
    rooms.delete(WEB_CLIENT);
    expect([...rooms].filter((room) => !floorOf.has(room))).toEqual([]);
  });

  it("nothing of the domain imports the HTTP edge (errors are values of src/errors; wire shapes live with their routes)", () => {
    const wrong = all.filter((c) => DOMAIN.includes(c.from) && EDGE.includes(c.to));
    expect(wrong.map((c) => `${c.file} -> ${c.target}`)).toEqual([]);
  });

  it("the domain asks the error catalogue what a failure means, never its HTTP status", () => {
    const wrong = [];
    for (const name of readdirSync(src, { recursive: true, encoding: "utf8" })) {
      if (!/\.tsx?$/.test(name) || !DOMAIN.includes(roomOf(name)) || roomOf(name) === "errors") continue;
      const text = readFileSync(join(src, name), "utf8");
      for (const match of text.matchAll(/instanceof ApiError[^;{]*?\.status\b/g))
        wrong.push(`src/${name}: ${match[0]}`);
    }
    expect(wrong).toEqual([]);
  });

  it("a room imports only rooms of lower floors", () => {
    const server = all.filter((c) => c.from !== WEB_CLIENT);
    const wrong = server.filter((c) => (floorOf.get(c.to) ?? 99) >= (floorOf.get(c.from) ?? -1));
    expect(wrong.map((c) => `${c.file} (${c.from}) -> ${c.target} (${c.to})`)).toEqual([]);
  });
});
