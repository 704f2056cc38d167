import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// docs/operations.md "Node.js": the project brings Node.js 24 (the `node` dev dependency); an older
// `node` on the PATH gets one clear line from the `zona` command, and `npm install` no warning about
// Zona's own version (package.json declares no `engines`, which npm would check against that `node`).

const REPO = new URL("../../", import.meta.url);
const SYSTEM_NODE = "/usr/bin/node";
const systemMajor = Number(
  /^v(\d+)\./.exec(spawnSync(SYSTEM_NODE, ["--version"], { encoding: "utf8" }).stdout ?? "")?.[1] ??
    Number.NaN,
);

describe("an older Node.js on the machine", () => {
  it("package.json declares no engines: npm install on the machine's node has no Zona version to warn about", () => {
    const manifest = JSON.parse(readFileSync(new URL("package.json", REPO), "utf8")) as Record<
      string,
      unknown
    >;
    expect(manifest.engines).toBeUndefined();
    expect(manifest.devDependencies).toHaveProperty("node");
  });

  it.skipIf(!(systemMajor < 24))(
    "the zona command run by it says in one line what to do, and exits 1",
    () => {
      const run = spawnSync(SYSTEM_NODE, ["bin/zona.js", "keys", "list"], { cwd: REPO, encoding: "utf8" });
      expect(run.status).toBe(1);
      expect(run.stdout).toBe("");
      expect(run.stderr).toMatch(
        /^zona: Node\.js 24 or newer is needed, this is v\d+\.\d+\.\d+: .*npx zona.*\n$/,
      );
    },
  );
});
