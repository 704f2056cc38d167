import type { UpstreamClient } from "../http/upstream-client.ts";
import { openAiPath, upstreamTarget } from "../http/upstream-target.ts";
import type { ProtocolAdapter } from "../modalities.ts";
import { type MachineConfig, UpstreamError } from "../types.ts";
import { expectImage, fromImagesAnswer, imagesRequest } from "./images-transforms.ts";

/** The default time one picture may take (`engines.image_timeout_seconds`). */
export const DEFAULT_IMAGE_TIMEOUT_MS = 180_000;

/** How the image adapters wait. */
export interface ImageAdapterOptions {
  /**
   * How long one picture may take before its answer: the whole answer comes at once when the picture
   * is made, so the client's first-byte timeout for text does not fit.
   */
  imageTimeoutMs?: number;
}

/**
 * The adapter for OpenAI-style image servers (vLLM-Omni, SGLang diffusion, stable-diffusion.cpp's
 * server, LocalAI): one picture per call, asked as base64; a server that answers with a link
 * anyway has it fetched (relative to the machine's url when not absolute).
 */
export function createImagesAdapter(
  client: UpstreamClient,
  options: ImageAdapterOptions = {},
): ProtocolAdapter<"images"> {
  const timeoutMs = options.imageTimeoutMs ?? DEFAULT_IMAGE_TIMEOUT_MS;
  return {
    images: {
      async generateImage(machine, call, signal) {
        const raw = await client.json({
          machine,
          path: openAiPath(machine, "/images/generations"),
          body: imagesRequest(machine, call),
          signal,
          headersTimeoutMs: timeoutMs,
        });
        const answer = fromImagesAnswer(raw);
        if (answer.kind === "bytes") return expectImage(answer.data, "the image server");
        const link = linkTarget(machine, answer.url);
        const file = await client.binary(
          { ...link, signal, headersTimeoutMs: timeoutMs },
          "image/png, image/jpeg, image/webp",
        );
        return expectImage(file.body, "the image server's link");
      },
    },
  };
}

/**
 * The machine and path a picture link is fetched from. A link to another origin is fetched without
 * the machine's key, which is meant for the machine only.
 */
function linkTarget(machine: MachineConfig, link: string): { machine: MachineConfig; path: string } {
  const base = machine.url ?? "";
  let url: URL;
  try {
    // Resolved against the url with a trailing slash, so `files/x.png` stays under its base path.
    url = new URL(link, base.endsWith("/") ? base : `${base}/`);
  } catch {
    throw new UpstreamError("protocol", "the image server sent a link that is not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UpstreamError("protocol", "the image server sent a link that is not http or https");
  }
  const path = `${url.pathname}${url.search}`;
  if (url.origin === upstreamTarget(machine).origin) return { machine, path };
  const { api_key: _key, ...rest } = machine;
  return { machine: { ...rest, url: url.origin }, path };
}
