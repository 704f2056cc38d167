import { CRASH_MODEL, type CrashKey } from "./crash-setup.ts";

/** How one chat completion of a fault experiment ended, as its client saw it. */
export type ChatAnswer =
  /** A 200 body that parsed, or a stream that reached `[DONE]`. */
  | { kind: "whole"; requestId: string }
  /** An error status, with the error's code when the body had one. */
  | { kind: "status"; status: number; code: string | null }
  /** A stream that began and ended with the spec's `error` event. */
  | { kind: "stream-error"; code: string | null }
  /** The connection was refused, reset or cut, or the stream ended without `[DONE]` or an error. */
  | { kind: "broken" };

/** Sends one chat completion (streamed or not) with a key and tells how it ended. */
export async function askChat(url: string, key: CrashKey, stream: boolean): Promise<ChatAnswer> {
  try {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: CRASH_MODEL,
        messages: [{ role: "user", content: "Tell me about the crash test." }],
        max_tokens: 16,
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await response.text();
    if (response.status !== 200) return { kind: "status", status: response.status, code: errorCode(text) };
    const requestId = response.headers.get("x-request-id");
    if (!requestId) return { kind: "broken" };
    if (stream) {
      if (text.endsWith("data: [DONE]\n\n")) return { kind: "whole", requestId };
      const last = text.trimEnd().split("\n\n").at(-1) ?? "";
      return last.startsWith('data: {"error"')
        ? { kind: "stream-error", code: errorCode(last.slice(6)) }
        : { kind: "broken" };
    }
    return (JSON.parse(text) as { object?: string }).object === "chat.completion"
      ? { kind: "whole", requestId }
      : { kind: "broken" };
  } catch {
    return { kind: "broken" };
  }
}

function errorCode(text: string): string | null {
  try {
    return (JSON.parse(text) as { error?: { code?: string | null } }).error?.code ?? null;
  } catch {
    return null;
  }
}
