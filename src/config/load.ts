import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import type { z } from "zod";
import { withBuiltinSpeech } from "./builtin-speech.ts";
import { type Config, configSchema } from "./schema.ts";

/** A configuration that cannot be used; the message names every bad field and why. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

/** Which environment variable overrides which field of the `server` section. */
const ENV_FIELDS = {
  PORT: "port",
  HOST: "host",
  ZONA_DATA_DIR: "data_dir",
  DATABASE_URL: "database_url",
  REDIS_URL: "redis_url",
  ZONA_ADMIN_TOKEN: "admin_token",
  ZONA_LOG_LEVEL: "log_level",
} as const;

/** Reads the YAML file (`ZONA_CONFIG`, else `zona.yaml` when present) and the environment, and validates both once. */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): Config {
  const file = configFilePath(env, cwd);
  const raw = file ? readYaml(file) : {};
  const { config, fromEnv } = applyEnv(raw, env);
  return withBuiltinSpeech(parseConfig(config, file ?? "environment", fromEnv));
}

/** Environment variables that are not configuration but the CLI and tests still read through config/. */
export function cliEnvironment(env: Env = process.env): { url?: string; adminToken?: string } {
  return {
    ...(env.ZONA_URL ? { url: env.ZONA_URL } : {}),
    ...(env.ZONA_ADMIN_TOKEN ? { adminToken: env.ZONA_ADMIN_TOKEN } : {}),
  };
}

/**
 * Validates an already-read configuration object. `fromEnv` maps `server` fields to the
 * variables that set them, so that an error names the variable the operator has to fix.
 */
export function parseConfig(
  raw: unknown,
  source = "configuration",
  fromEnv: Record<string, string> = {},
): Config {
  const result = configSchema.safeParse(raw);
  if (!result.success) throw new ConfigError(describeIssues(result.error.issues, source, fromEnv));
  return result.data;
}

function configFilePath(env: Env, cwd: string): string | undefined {
  if (env.ZONA_CONFIG) {
    const path = resolve(cwd, env.ZONA_CONFIG);
    if (!existsSync(path)) throw new ConfigError(`ZONA_CONFIG: file not found: ${path}`);
    return path;
  }
  const fallback = resolve(cwd, "zona.yaml");
  return existsSync(fallback) ? fallback : undefined;
}

function readYaml(path: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ConfigError(`${path}: not valid YAML: ${(error as Error).message}`);
  }
  if (parsed === null || parsed === undefined) return {};
  if (typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ConfigError(`${path}: the top level must be a mapping of sections`);
  }
  return parsed as Record<string, unknown>;
}

function applyEnv(
  raw: Record<string, unknown>,
  env: Env,
): { config: Record<string, unknown>; fromEnv: Record<string, string> } {
  // A `server` that is not a mapping is left as it is, for the schema to refuse.
  if (raw.server !== undefined && !isRecord(raw.server)) return { config: raw, fromEnv: {} };
  const server = { ...(raw.server ?? {}) };
  const fromEnv: Record<string, string> = {};
  for (const [variable, field] of Object.entries(ENV_FIELDS)) {
    const value = env[variable];
    if (value === undefined || value === "") continue;
    server[field] = field === "port" ? parsePort(value) : value;
    fromEnv[`server.${field}`] = variable;
  }
  return { config: { ...raw, server }, fromEnv };
}

function parsePort(value: string): number {
  if (!/^\d+$/.test(value))
    throw new ConfigError(`PORT: must be a whole number from 0 to 65535, got "${value}"`);
  return Number(value);
}

function describeIssues(issues: z.core.$ZodIssue[], source: string, fromEnv: Record<string, string>): string {
  const lines = issues.map((issue) => {
    const path = issue.path
      .map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`))
      .join("");
    const field = path.startsWith(".") ? path.slice(1) : path || "(top level)";
    const variable = fromEnv[field];
    return `  ${field}${variable ? ` (set by ${variable})` : ""}: ${issue.message}`;
  });
  return `invalid configuration (${source}):\n${lines.join("\n")}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
