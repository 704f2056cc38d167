import type { FastifyBaseLogger } from "fastify";
import { PIPER_VOICES } from "./adapters/piper-adapter.ts";
import { UpstreamClient } from "./http/upstream-client.ts";
import { openAiPath, rootPath } from "./http/upstream-target.ts";
import { declaredModels } from "./served-models.ts";
import { type MachineConfig, UpstreamError, type VoiceName } from "./types.ts";
import { type UpstreamLogFields, upstreamLogFields } from "./upstream-log.ts";

/** A model (or Piper voice model) a machine is declared for that its engine does not list. */
export interface MissingModel {
  /** The catalogue id. */
  model: string;
  /** The name looked for on the engine (the upstream name, or the voice model). */
  upstream: string;
  /** For Piper: the own voice the voice model reads. */
  voice?: VoiceName;
}

/** What the check found on one machine. */
export interface MachineCheck {
  machine: string;
  protocol: MachineConfig["protocol"];
  /** The machine's url without credentials or query; undefined for built-in engines. */
  url: string | undefined;
  /** Whether the server answered at all (built-in engines always do). */
  reachable: boolean;
  /** The names the server lists; null when it has no list, could not be read, or is built in. */
  served: string[] | null;
  /** Declared models the server does not list (empty when it could not be asked). */
  missing: MissingModel[];
  /** Why the server could not be reached or read, when it could not (without the engine's words). */
  error?: string;
  /** How the log describes that failure, when it was the server's. */
  upstream?: UpstreamLogFields;
}

/** How the check runs. */
export interface MachineCheckOptions {
  /** How long each machine may take to answer (`engines.probe_timeout_ms`). */
  timeoutMs: number;
  log: FastifyBaseLogger;
  /** The Piper voice models to look for (`engines.piper_voices`); default: the default models. */
  piperVoices?: Readonly<Record<VoiceName, string>>;
}

/** Where a protocol's servers list what they serve, and how to read the answer. */
interface Listing {
  path(machine: MachineConfig): string;
  /** The names in the answer; undefined when the answer is not such a list. */
  read(body: unknown): string[] | undefined;
  /** Servers of this protocol may have no list (404 or 405): being reachable is then enough. */
  optional: boolean;
}

const openAiModels = (optional: boolean): Listing => ({
  path: (machine) => openAiPath(machine, "/models"),
  read: (body) => namesOf(field(body, "data"), "id"),
  optional,
});

/** The listing of each protocol; null for the built-in engines, which have nothing to ask. */
const LISTINGS: Record<MachineConfig["protocol"], Listing | null> = {
  openai: openAiModels(false),
  // vLLM-Omni, SGLang and LocalAI list their models; stable-diffusion.cpp's server may have no list.
  images: openAiModels(true),
  // ComfyUI lists no model names of ours (its workflow names the checkpoint): answering is enough.
  comfyui: {
    path: (machine) => rootPath(machine, "/system_stats"),
    read: () => undefined,
    optional: true,
  },
  videos: openAiModels(false),
  // speaches lists its downloaded models; whisper.cpp's server has no list.
  whisper: openAiModels(true),
  moderation: openAiModels(true),
  ollama: {
    path: (machine) => rootPath(machine, "/api/tags"),
    read: (body) => namesOf(field(body, "models"), "name"),
    optional: false,
  },
  tei: {
    path: (machine) => rootPath(machine, "/info"),
    read: (body) => {
      const id = field(body, "model_id");
      return typeof id === "string" ? [id] : undefined;
    },
    optional: false,
  },
  // piper1-gpl's server lists the voice models it has downloaded (an object keyed by their names).
  piper: {
    path: (machine) => rootPath(machine, "/voices"),
    read: (body) => (isObject(body) ? Object.keys(body) : undefined),
    optional: true,
  },
  espeak: null,
};

/**
 * Asks every machine, in parallel, what it serves (`GET /v1/models`, Ollama's `/api/tags`, TEI's
 * `/info`, Piper's `/voices`), with the machine's `api_key` as bearer token, and logs one line per
 * machine: a warning naming the machine, its url and the error when it cannot be reached or read, a
 * warning naming each declared model with the name looked for (and what the engine lists) when a
 * model is missing, an info line otherwise. Never throws; resolves with what it found, in the
 * machines' order.
 */
export async function checkMachines(
  machines: MachineConfig[],
  options: MachineCheckOptions,
): Promise<MachineCheck[]> {
  const client = new UpstreamClient({
    connectMs: options.timeoutMs,
    headersMs: options.timeoutMs,
    bodyMs: options.timeoutMs,
  });
  try {
    const voices = options.piperVoices ?? PIPER_VOICES;
    const checks = await Promise.all(
      machines.map((machine) => checkOne(client, machine, options.timeoutMs, voices)),
    );
    for (const check of checks) logCheck(options.log, check);
    return checks;
  } finally {
    await client.close();
  }
}

async function checkOne(
  client: UpstreamClient,
  machine: MachineConfig,
  timeoutMs: number,
  voices: Readonly<Record<VoiceName, string>>,
): Promise<MachineCheck> {
  const listing = LISTINGS[machine.protocol];
  const base = { machine: machine.name, protocol: machine.protocol, url: safeUrl(machine.url) };
  if (listing === null) return { ...base, reachable: true, served: null, missing: [] };
  const path = listing.path(machine);
  let body: unknown;
  try {
    body = await client.json({ machine, path, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    const upstream = error instanceof UpstreamError ? upstreamLogFields(error) : undefined;
    const message = upstream?.reason ?? (error instanceof Error ? error.message : String(error));
    const answered = error instanceof UpstreamError && (error.kind === "status" || error.kind === "protocol");
    const noList = error instanceof UpstreamError && (error.status === 404 || error.status === 405);
    if (listing.optional && answered && (noList || error.kind === "protocol")) {
      return { ...base, reachable: true, served: null, missing: [] };
    }
    // An answer that is not the list names what was asked: a wrong url or protocol shows there.
    const why = answered ? `GET ${path}: ${message}` : message;
    return {
      ...base,
      reachable: answered,
      served: null,
      missing: [],
      error: why,
      ...(upstream ? { upstream } : {}),
    };
  }
  const served = listing.read(body);
  if (served === undefined) {
    if (listing.optional) return { ...base, reachable: true, served: null, missing: [] };
    const why = `GET ${path}: the answer is not the list this protocol's servers send`;
    return { ...base, reachable: true, served: null, missing: [], error: why };
  }
  const missing = expected(machine, voices).filter(
    (want) => !served.some((name) => matches(machine, want, name)),
  );
  return { ...base, reachable: true, served, missing };
}

/** What a machine should list: its declared models by their upstream names; for Piper, the voice models. */
function expected(machine: MachineConfig, voices: Readonly<Record<VoiceName, string>>): MissingModel[] {
  if (machine.protocol === "piper") {
    const model = machine.models[0] ?? "tts-1";
    return (Object.entries(voices) as Array<[VoiceName, string]>).map(([voice, upstream]) => ({
      model,
      upstream,
      voice,
    }));
  }
  return declaredModels(machine).map(({ id, upstream }) => ({ model: id, upstream }));
}

/**
 * Whether a listed name is the one looked for. Ollama adds `:latest` to a name without a tag; TEI
 * is sent no name, so its Hugging Face id (`BAAI/bge-m3`) also matches a plain `bge-m3`.
 */
function matches(machine: MachineConfig, want: MissingModel, listed: string): boolean {
  if (listed === want.upstream) return true;
  if (machine.protocol === "ollama") return withTag(listed) === withTag(want.upstream);
  if (machine.protocol === "tei") return baseName(listed) === baseName(want.upstream);
  return false;
}

function withTag(name: string): string {
  const last = name.slice(name.lastIndexOf("/") + 1);
  return last.includes(":") ? name : `${name}:latest`;
}

function baseName(name: string): string {
  return name.slice(name.lastIndexOf("/") + 1).toLowerCase();
}

function logCheck(log: FastifyBaseLogger, check: MachineCheck): void {
  const where = `machine ${check.machine} (${check.protocol}${check.url ? ` at ${check.url}` : ""})`;
  const fields = { machine: check.machine, protocol: check.protocol, url: check.url };
  if (check.error !== undefined) {
    const what = check.reachable ? "could not be checked" : "is unreachable";
    log.warn({ ...fields, ...check.upstream, error: check.error }, `${where} ${what}: ${check.error}`);
    return;
  }
  if (check.missing.length > 0) {
    const names = check.missing.map((m) =>
      m.voice
        ? `voice ${m.voice} of ${m.model} (voice model "${m.upstream}")`
        : m.upstream === m.model
          ? `${m.model} (looked for "${m.upstream}")`
          : `${m.model} (looked for its upstream name "${m.upstream}")`,
    );
    const lists = shortList(check.served ?? []);
    log.warn(
      { ...fields, missing: check.missing, lists },
      `${where} does not serve ${names.join(", ")}; it lists: ${lists}`,
    );
    return;
  }
  const how =
    check.url === undefined
      ? "is built in"
      : check.served === null
        ? "answers (it does not list what it serves)"
        : "serves what it is declared for";
  log.info(fields, `${where} ${how}`);
}

const LIST_CHARACTERS = 200;

/** Names joined for a log line, cut after about 200 characters with the count of the rest. */
function shortList(names: string[]): string {
  if (names.length === 0) return "nothing";
  let text = "";
  for (const [i, name] of names.entries()) {
    const next = text === "" ? name : `${text}, ${name}`;
    if (next.length > LIST_CHARACTERS && text !== "") return `${text} … (${names.length - i} more)`;
    text = next;
  }
  return text;
}

/** A url fit for a log line: no user, password, query or fragment. */
function safeUrl(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function field(body: unknown, name: string): unknown {
  return isObject(body) ? body[name] : undefined;
}

/** The string `key` of each entry of a list; undefined when it is not a list. */
function namesOf(list: unknown, key: string): string[] | undefined {
  if (!Array.isArray(list)) return undefined;
  return list.flatMap((entry) => {
    const name = field(entry, key);
    return typeof name === "string" ? [name] : [];
  });
}
