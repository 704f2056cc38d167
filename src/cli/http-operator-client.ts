import { PREFIX } from "../http/surface.ts";
import { CliFailure } from "./cli-errors.ts";
import type { OperatorClient } from "./operator-client.ts";

const TIMEOUT_MS = 60_000;

/**
 * Calls the operator API (`/admin/v1`) of a running server with the admin token, or with the local
 * credential read from `credentialFile` (named in the failure when the server refuses it).
 */
export function httpOperatorClient(
  baseUrl: string,
  adminToken: string,
  credentialFile?: string,
): OperatorClient {
  const root = baseUrl.replace(/\/+$/, "");
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const url = `${root}${PREFIX.admin}${path}`;
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${adminToken}`,
          accept: "application/json",
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
    } catch (error) {
      throw unreachable(root, error);
    }
    const text = await response.text();
    const parsed = parseJson(text);
    if (!response.ok) throw apiFailure(root, response.status, parsed, text, credentialFile);
    if (parsed === undefined) {
      throw new CliFailure(
        `the server at ${root} answered ${method} ${path} with something that is not JSON`,
      );
    }
    return parsed as T;
  };
  const id = (value: string) => encodeURIComponent(value);
  return {
    createAccount: (body) => call("POST", "/accounts", body),
    listAccounts: (query) => call("GET", `/accounts${queryString(query)}`),
    getAccount: (accountId) => call("GET", `/accounts/${id(accountId)}`),
    setAccountDisabled: (accountId, disabled) =>
      call("POST", `/accounts/${id(accountId)}/${disabled ? "disable" : "enable"}`),
    verifyEmail: (accountId) => call("POST", `/accounts/${id(accountId)}/verify-email`),
    createKey: (accountId, body) => call("POST", `/accounts/${id(accountId)}/keys`, body),
    listKeys: (query) => call("GET", `/keys${queryString(query)}`),
    getKey: (keyId) => call("GET", `/keys/${id(keyId)}`),
    updateKey: (keyId, body) => call("PATCH", `/keys/${id(keyId)}`, body),
    revokeKey: (keyId) => call("POST", `/keys/${id(keyId)}/revoke`),
    getCredits: (accountId) => call("GET", `/accounts/${id(accountId)}/credits`),
    setCredits: (accountId, body) => call("PUT", `/accounts/${id(accountId)}/credits`, body),
    addCredits: (accountId, body) => call("POST", `/accounts/${id(accountId)}/credits`, body),
    listUsage: (query) => call("GET", `/usage${queryString(query)}`),
    usageSummary: (query) => call("GET", `/usage/summary${queryString(query)}`),
    listModels: () => call("GET", "/models"),
    listKnowledgeBases: () => call("GET", "/knowledge-bases"),
    setKnowledgeBaseShared: (slug, shared) =>
      call("POST", `/knowledge-bases/${id(slug)}/${shared ? "share" : "unshare"}`),
    listMail: (query) => call("GET", `/mail${queryString(query)}`),
    listMachines: () => call("GET", "/machines"),
    reload: () => call("POST", "/reload"),
    setModelActive: (modelId, active) =>
      call("POST", `/models/${id(modelId)}/${active ? "activate" : "deactivate"}`),
  };
}

function queryString(query: unknown): string {
  if (typeof query !== "object" || query === null) return "";
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

function apiFailure(
  root: string,
  status: number,
  body: unknown,
  text: string,
  credentialFile: string | undefined,
): CliFailure {
  const record = isRecord(body) ? body : {};
  const error = isRecord(record.error) ? record.error : {};
  const message =
    stringOr(error.message) ?? stringOr(record.message) ?? (text.trim().slice(0, 200) || `HTTP ${status}`);
  const code = stringOr(error.code) ?? stringOr(error.type) ?? `http_${status}`;
  // A server on PostgreSQL started without an admin token has no operator API: say so rather than "unknown URL".
  if (code === "unknown_endpoint") {
    return new CliFailure(
      `the server at ${root} has no operator API; start it with ZONA_ADMIN_TOKEN set (the same token as here)`,
      code,
    );
  }
  // The server writes a new credential at every start: one read just before a restart is refused.
  if (code === "invalid_admin_token" && credentialFile !== undefined) {
    return new CliFailure(
      `the server at ${root} refused the operator credential of ${credentialFile}; if it has just ` +
        "restarted, try again (from another machine: --url with ZONA_ADMIN_TOKEN)",
      code,
    );
  }
  return new CliFailure(message, code);
}

function unreachable(root: string, error: unknown): CliFailure {
  if (error instanceof Error && error.name === "TimeoutError") {
    return new CliFailure(`the Zona server at ${root} did not answer within ${TIMEOUT_MS / 1000} s`);
  }
  const cause = error instanceof Error ? (error.cause as NodeJS.ErrnoException | undefined) : undefined;
  const reason = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
  return new CliFailure(`cannot reach the Zona server at ${root} (${reason}); is it running?`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function stringOr(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}
