import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/load.ts";

type Env = Record<string, string>;

/** One bad configuration and the field its error must name (at the start of a line, followed by a colon). */
interface BadConfig {
  rule: string;
  yaml?: string;
  env?: Env;
  field: string;
  /** More text the message must contain. */
  mentions?: string[];
}

const ZONES = "installation:\n  zones:\n    - id: ch-ti\n    - id: ch-zh\n";
const CATALOGUE = "models:\n  - id: gemma3.8-27b\n    kind: chat\n";

const cases: BadConfig[] = [
  {
    rule: "currency other than CHF or credits",
    yaml: "installation:\n  currency: EUR\n",
    field: "installation.currency",
  },
  {
    rule: "language outside it, en, de, fr, rm",
    yaml: "installation:\n  language: es\n",
    field: "installation.language",
  },
  { rule: "port above 65535", yaml: "server:\n  port: 70000\n", field: "server.port" },
  { rule: "port that is not a number", yaml: "server:\n  port: eighty\n", field: "server.port" },
  { rule: "PORT that is not a whole number", env: { PORT: "abc" }, field: "PORT", mentions: ['"abc"'] },
  { rule: "PORT that is negative", env: { PORT: "-1" }, field: "PORT" },
  {
    rule: "admin token shorter than 16 characters (from ZONA_ADMIN_TOKEN too)",
    env: { ZONA_ADMIN_TOKEN: "short" },
    field: "server.admin_token (set by ZONA_ADMIN_TOKEN)",
    mentions: ["at least 16 characters"],
  },
  {
    rule: "log level that does not exist",
    env: { ZONA_LOG_LEVEL: "loud" },
    field: "server.log_level (set by ZONA_LOG_LEVEL)",
  },
  {
    rule: "database URL that is not PostgreSQL",
    env: { DATABASE_URL: "mysql://db/zona" },
    field: "server.database_url (set by DATABASE_URL)",
    mentions: ["postgres://"],
  },
  {
    rule: "Redis URL that is not redis:// or rediss://",
    yaml: "server:\n  redis_url: http://redis\n",
    field: "server.redis_url",
  },
  {
    rule: "grace period of 0 seconds",
    yaml: "server:\n  shutdown_grace_seconds: 0\n",
    field: "server.shutdown_grace_seconds",
  },
  {
    rule: "unknown top-level key",
    yaml: "sever:\n  port: 8080\n",
    field: "(top level)",
    mentions: ['"sever"'],
  },
  {
    rule: "unknown key inside a section",
    yaml: "server:\n  prot: 8080\n",
    field: "server",
    mentions: ['"prot"'],
  },
  { rule: "a section that is not a mapping", yaml: "installation: Zona\n", field: "installation" },
  {
    rule: "a server section that is not a mapping, env set too",
    yaml: "server: 5\n",
    env: { PORT: "9000" },
    field: "server",
  },
  {
    rule: "duplicate zone ids",
    yaml: "installation:\n  zones:\n    - id: ch-ti\n    - id: ch-ti\n",
    field: "installation.zones[1].id",
    mentions: ["declared twice"],
  },
  {
    rule: "zone id with capitals or spaces",
    yaml: "installation:\n  zones:\n    - id: Ch Ti\n",
    field: "installation.zones[0].id",
  },
  {
    rule: "fallback zone that is not a valid id",
    yaml: "installation:\n  fallback_zone: CH!\n",
    field: "installation.fallback_zone",
  },
  {
    rule: "trusted network that is not an address or CIDR range",
    yaml: "installation:\n  trusted_networks: [10.0.0.0/33]\n",
    field: "installation.trusted_networks[0]",
  },
  {
    rule: "tier multiplier of 0",
    yaml: "tiers:\n  fast:\n    multiplier: 0\n    requests_per_minute: 300\n",
    field: "tiers.fast.multiplier",
  },
  {
    rule: "tier without requests_per_minute",
    yaml: "tiers:\n  slow:\n    multiplier: 1\n",
    field: "tiers.slow.requests_per_minute",
  },
  {
    rule: "unknown tier",
    yaml: "tiers:\n  turbo:\n    multiplier: 1\n    requests_per_minute: 1\n",
    field: "tiers",
    mentions: ['"turbo"'],
  },
  {
    rule: "negative price",
    yaml: "prices:\n  speech_per_character: -0.1\n",
    field: "prices.speech_per_character",
  },
  { rule: "model of an unknown kind", yaml: "models:\n  - id: m\n    kind: llm\n", field: "models[0].kind" },
  {
    rule: "model id with a control character (a tab)",
    yaml: 'models:\n  - id: "chat\\tmodel"\n    kind: chat\n',
    field: "models[0].id",
    mentions: ["control characters"],
  },
  {
    rule: "negative model price",
    yaml: "models:\n  - id: m\n    kind: chat\n    prices:\n      input_per_million_tokens: -1\n",
    field: "models[0].prices.input_per_million_tokens",
  },
  {
    rule: "duplicate model ids",
    yaml: `${CATALOGUE}  - id: gemma3.8-27b\n    kind: chat\n`,
    field: "models[1].id",
    mentions: ["declared twice"],
  },
  {
    rule: "machine in a zone the installation does not have",
    yaml: `${ZONES}machines:\n  - name: m1\n    zone: de-fra\n    protocol: openai\n    url: http://10.0.0.1:8000\n`,
    field: "machines[0].zone",
    mentions: ["ch-ti, ch-zh"],
  },
  {
    rule: "machine naming a model that is not in the catalogue",
    yaml: `${ZONES}${CATALOGUE}machines:\n  - name: m1\n    zone: ch-ti\n    protocol: openai\n    url: http://10.0.0.1:8000\n    models: [gemma3.8-27b, llama-9]\n`,
    field: "machines[0].models[1]",
    mentions: ["llama-9"],
  },
  {
    rule: "machine without url for a protocol other than espeak",
    yaml: `${ZONES}machines:\n  - name: m1\n    zone: ch-ti\n    protocol: tei\n`,
    field: "machines[0].url",
  },
  {
    rule: "machine url that is not http(s)",
    yaml: `${ZONES}machines:\n  - name: m1\n    zone: ch-ti\n    protocol: openai\n    url: ftp://10.0.0.1\n`,
    field: "machines[0].url",
  },
  {
    rule: "machine of an unknown protocol",
    yaml: `${ZONES}machines:\n  - name: m1\n    zone: ch-ti\n    protocol: grpc\n    url: http://10.0.0.1\n`,
    field: "machines[0].protocol",
  },
  {
    rule: "duplicate machine names",
    yaml: `${ZONES}machines:\n  - { name: m1, zone: ch-ti, protocol: espeak }\n  - { name: m1, zone: ch-zh, protocol: espeak }\n`,
    field: "machines[1].name",
    mentions: ["declared twice"],
  },
  {
    rule: "machine capacity of 0",
    yaml: `${ZONES}machines:\n  - { name: m1, zone: ch-ti, protocol: espeak, capacity: 0 }\n`,
    field: "machines[0].capacity",
  },
  {
    rule: "machine serving a tier that does not exist",
    yaml: `${ZONES}machines:\n  - { name: m1, zone: ch-ti, protocol: espeak, tiers: [turbo] }\n`,
    field: "machines[0].tiers[0]",
  },
];

describe("a bad configuration is a ConfigError naming the field at fault", () => {
  let dir: string;
  let counter = 0;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "zona-config-errors-"));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  /** Loads a configuration made of an optional YAML file and some environment; returns the error. */
  async function failure(yaml: string | undefined, env: Env = {}): Promise<ConfigError> {
    const fullEnv = { ...env };
    if (yaml !== undefined) {
      counter += 1;
      const file = join(dir, `case-${counter}.yaml`);
      await writeFile(file, yaml);
      fullEnv.ZONA_CONFIG = file;
    }
    try {
      loadConfig(fullEnv, dir);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return error as ConfigError;
    }
    throw new Error("the configuration was accepted");
  }

  it.each(cases)("$rule: names $field", async ({ yaml, env, field, mentions }) => {
    const error = await failure(yaml, env);
    const lineStart = new RegExp(`^\\s*${field.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: `, "m");
    expect(error.message).toMatch(lineStart);
    for (const text of mentions ?? []) expect(error.message).toContain(text);
  });

  it("names the file the bad field came from", async () => {
    const error = await failure("installation:\n  currency: EUR\n");
    expect(error.message).toContain(`invalid configuration (${join(dir, `case-${counter}.yaml`)})`);
  });

  it("names every bad field at once, one per line", async () => {
    const error = await failure("server:\n  port: -1\ninstallation:\n  currency: EUR\n  language: es\n");
    expect(error.message.split("\n").slice(1)).toEqual([
      expect.stringMatching(/^ {2}server\.port: /),
      expect.stringMatching(/^ {2}installation\.language: /),
      expect.stringMatching(/^ {2}installation\.currency: /),
    ]);
  });

  it("invalid YAML names the file and says it is not valid YAML", async () => {
    const error = await failure("server:\n  port: [8080\n");
    expect(error.message).toContain(join(dir, `case-${counter}.yaml`));
    expect(error.message).toContain("not valid YAML");
  });

  it("a file whose top level is not a mapping is refused", async () => {
    const error = await failure("- server\n- installation\n");
    expect(error.message).toContain("the top level must be a mapping of sections");
  });

  it("ZONA_CONFIG pointing to a missing file names ZONA_CONFIG and the path", async () => {
    const error = await failure(undefined, { ZONA_CONFIG: "does-not-exist.yaml" });
    expect(error.message).toMatch(/^ZONA_CONFIG: file not found: /);
    expect(error.message).toContain(join(dir, "does-not-exist.yaml"));
  });
});
