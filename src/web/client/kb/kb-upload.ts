import { useEffect, useRef, useState } from "preact/hooks";
import type { KbDocumentView } from "../../../contract/app-api.ts";
import { API_BASE, freshAccessToken } from "../api/api-client.ts";
import { ApiError } from "../api/api-error.ts";
import { t } from "../i18n/i18n.ts";
import { DOCUMENT_MAX_BYTES, documentsPath, kbErrorText } from "./kb-api.ts";

/** A file being uploaded, waiting for its turn, or refused. */
export interface UploadItem {
  key: string;
  name: string;
  size: number;
  /** waiting: in line; uploading: bytes going; checking: sent, Zona judging it; paused: rate limited; failed. */
  phase: "waiting" | "uploading" | "checking" | "paused" | "failed";
  loaded: number;
  total: number;
  /** Seconds until a rate-limited upload is tried again. */
  retryIn?: number;
  /** Why it was refused, in the interface language. */
  failure?: string;
  /** Zona's own reason for a refused file (as the app API words it). */
  detail?: string;
}

// A rate-limited upload (10 a minute) is tried again after Retry-After, a few times.
const RATE_LIMIT_RETRIES = 3;
let serial = 0;

/**
 * Uploads files to a base one after another (`POST /rag/kb/{slug}/docs`, multipart `file`) with
 * their progress; each document Zona accepted goes to `onUploaded` (it is then `queued`). Uploads
 * stop when the component goes away.
 */
export function useUploads(slug: string, onUploaded: (document: KbDocumentView) => void) {
  const [items, setItems] = useState<UploadItem[]>([]);
  const queue = useRef<Array<{ key: string; file: File }>>([]);
  const running = useRef(false);
  const controller = useRef(new AbortController());
  const uploaded = useRef(onUploaded);
  uploaded.current = onUploaded;

  useEffect(() => {
    const current = controller.current;
    return () => current.abort();
  }, []);

  const change = (key: string, patch: Partial<UploadItem>) =>
    setItems((list) => list.map((item) => (item.key === key ? { ...item, ...patch } : item)));
  const remove = (key: string) => setItems((list) => list.filter((item) => item.key !== key));

  const uploadOne = async (key: string, file: File) => {
    const signal = controller.current.signal;
    if (file.size > DOCUMENT_MAX_BYTES) {
      change(key, { phase: "failed", failure: t("kb.upload.tooLarge") });
      return;
    }
    for (let attempt = 0; ; attempt += 1) {
      change(key, { phase: "uploading", loaded: 0, total: file.size, retryIn: undefined });
      try {
        const document = await uploadDocument(slug, file, signal, {
          progress: (loaded, total) => change(key, { loaded, total }),
          sent: () => change(key, { phase: "checking" }),
        });
        remove(key);
        uploaded.current(document);
        return;
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof ApiError && error.status === 429 && attempt < RATE_LIMIT_RETRIES) {
          await countdown(error.retryAfter ?? 60, signal, (seconds) =>
            change(key, { phase: "paused", retryIn: seconds }),
          );
          if (signal.aborted) return;
          continue;
        }
        change(key, { phase: "failed", ...failureOf(error) });
        return;
      }
    }
  };

  const run = async () => {
    if (running.current) return;
    running.current = true;
    try {
      for (let next = queue.current.shift(); next; next = queue.current.shift()) {
        if (controller.current.signal.aborted) return;
        await uploadOne(next.key, next.file);
      }
    } finally {
      running.current = false;
    }
  };

  return {
    items,
    /** Puts files in line for upload. */
    add(files: Iterable<File>) {
      const added = [...files].map((file) => ({ key: `upload-${++serial}`, file }));
      if (added.length === 0) return;
      setItems((list) => [
        ...list,
        ...added.map(
          ({ key, file }): UploadItem => ({
            key,
            name: file.name,
            size: file.size,
            phase: "waiting",
            loaded: 0,
            total: file.size,
          }),
        ),
      ]);
      queue.current.push(...added);
      void run();
    },
    /** Takes a refused file off the list. */
    dismiss: remove,
  };
}

function failureOf(error: unknown): { failure: string; detail?: string } {
  if (error instanceof ApiError) {
    if (error.code === "unsupported_document")
      return { failure: t("kb.upload.unsupported"), detail: error.message };
    if (error.status === 413) return { failure: t("kb.upload.tooLarge") };
  }
  return { failure: kbErrorText(error) };
}

async function countdown(seconds: number, signal: AbortSignal, tick: (left: number) => void): Promise<void> {
  for (let left = Math.ceil(seconds); left > 0 && !signal.aborted; left -= 1) {
    tick(left);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/**
 * Sends one file with XMLHttpRequest (fetch reports no upload progress), with the access token,
 * renewed first when near its end and once more when refused. Throws ApiError for a refusal.
 */
async function uploadDocument(
  slug: string,
  file: File,
  signal: AbortSignal,
  on: { progress: (loaded: number, total: number) => void; sent: () => void },
): Promise<KbDocumentView> {
  let response = await send(slug, file, await freshAccessToken(), signal, on);
  if (response.status === 401)
    response = await send(slug, file, await freshAccessToken({ renew: true }), signal, on);
  if (!response.ok) throw await ApiError.from(response);
  return (await response.json()) as KbDocumentView;
}

function send(
  slug: string,
  file: File,
  token: string,
  signal: AbortSignal,
  on: { progress: (loaded: number, total: number) => void; sent: () => void },
): Promise<Response> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new DOMException("The upload was stopped.", "AbortError"));
      return;
    }
    const xhr = new XMLHttpRequest();
    const abort = () => xhr.abort();
    signal.addEventListener("abort", abort, { once: true });
    const settle = () => signal.removeEventListener("abort", abort);
    xhr.open("POST", `${API_BASE}${documentsPath(slug)}`);
    xhr.setRequestHeader("authorization", `Bearer ${token}`);
    xhr.upload.onprogress = (event) =>
      on.progress(event.loaded, event.lengthComputable ? event.total : file.size);
    xhr.upload.onload = () => on.sent();
    xhr.onload = () => {
      settle();
      const headers = new Headers();
      for (const name of ["content-type", "retry-after"]) {
        const value = xhr.getResponseHeader(name);
        if (value !== null) headers.set(name, value);
      }
      const empty = xhr.status === 204 || xhr.status === 304;
      resolve(
        new Response(empty ? null : xhr.responseText, {
          status: xhr.status,
          statusText: xhr.statusText,
          headers,
        }),
      );
    };
    xhr.onerror = () => {
      settle();
      reject(new ApiError(0, "network", "Zona could not be reached."));
    };
    xhr.onabort = () => {
      settle();
      reject(new DOMException("The upload was stopped.", "AbortError"));
    };
    const form = new FormData();
    form.append("file", file, file.name);
    xhr.send(form);
  });
}
