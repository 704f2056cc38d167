import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { runCli } from "../../src/cli/run-cli.ts";

/** Help and usage never open a database: the environment points at nothing usable on purpose. */
async function zona(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: { write: (chunk: string) => (stdout += chunk) },
    stderr: { write: (chunk: string) => (stderr += chunk) },
    stdin: Readable.from([]),
    env: { ZONA_CONFIG: "/nonexistent/zona.yaml" },
    cwd: "/nonexistent",
  });
  return { code, stdout, stderr };
}

describe("zona --help and usage errors", () => {
  it("zona --help lists the groups on stdout and exits 0", async () => {
    for (const args of [["--help"], ["-h"], ["help"]]) {
      const run = await zona(args);
      expect(run.code).toBe(0);
      expect(run.stderr).toBe("");
      expect(run.stdout).toContain("Usage: zona <group> <command>");
      for (const group of ["accounts", "keys", "credits"]) expect(run.stdout).toContain(`  ${group} `);
      expect(run.stdout).toContain("ZONA_ADMIN_TOKEN");
    }
  });

  it("zona GROUP --help lists every command of the group", async () => {
    const accounts = await zona(["accounts", "--help"]);
    expect(accounts.code).toBe(0);
    for (const command of ["create", "list", "show", "disable", "enable", "verify-email"]) {
      expect(accounts.stdout).toContain(`zona accounts ${command}`);
    }
    const keys = await zona(["--help", "keys"]);
    expect(keys.stdout).toContain("zona keys create ACCOUNT|--account ACCOUNT --name N [--zones a,b]");
    const credits = await zona(["credits", "-h"]);
    expect(credits.stdout).toContain("zona credits add ACCOUNT AMOUNT [--note T]");
  });

  it("zona GROUP COMMAND --help shows the usage and options, even with other arguments", async () => {
    const run = await zona(["keys", "create", "someone@example.com", "--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("Usage: zona keys create ACCOUNT|--account ACCOUNT --name N");
    expect(run.stdout).toContain("--monthly-limit");
    const create = await zona(["accounts", "create", "-h"]);
    expect(create.stdout).toContain("--password-stdin");
  });

  it("a missing group or command shows help on stderr and exits 2", async () => {
    const bare = await zona([]);
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe("");
    expect(bare.stderr).toContain("Usage: zona");
    const group = await zona(["keys"]);
    expect(group.code).toBe(2);
    expect(group.stderr).toContain("zona keys create");
  });

  it("unknown groups, commands, options and wrong argument counts exit 2 and point to the help", async () => {
    expect(await zona(["users", "list"])).toEqual({
      code: 2,
      stdout: "",
      stderr: "zona: unknown command group 'users'\nRun 'zona --help' for usage.\n",
    });
    expect((await zona(["credits", "remove", "x", "1"])).stderr).toBe(
      "zona: unknown command 'zona credits remove'\nRun 'zona credits --help' for usage.\n",
    );
    expect((await zona(["credits", "add", "x"])).stderr).toBe(
      "zona: missing AMOUNT\nRun 'zona credits add --help' for usage.\n",
    );
    expect((await zona(["credits", "show", "x", "y", "z"])).stderr).toBe(
      "zona: unexpected arguments: y z\nRun 'zona credits show --help' for usage.\n",
    );
    expect((await zona(["keys", "create", "x", "--name"])).stderr).toBe(
      "zona: option '--name' needs a value\nRun 'zona keys create --help' for usage.\n",
    );
    expect((await zona(["accounts", "create", "--verified=yes", "--email", "a@b.ch"])).code).toBe(2);
    expect((await zona(["--colour", "accounts", "list"])).code).toBe(2);
  });

  it("a configuration that cannot be read exits 1 with its message", async () => {
    const run = await zona(["accounts", "list"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe("zona: ZONA_CONFIG: file not found: /nonexistent/zona.yaml\n");
  });
});
