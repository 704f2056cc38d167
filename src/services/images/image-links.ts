import { createHmac, timingSafeEqual } from "node:crypto";

/** Where kept pictures are served (under the key API's prefix, without a key). */
export const IMAGE_FILE_PATH = "/v1/images/file/";

const FILE_PATH = /^\/v1\/images\/file\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.png$/;
const EXPIRES = /^[0-9]{1,12}$/;
const SIGNATURE = /^[0-9a-f]{64}$/;

/** A link that passed its signature check. */
export interface VerifiedLink {
  id: string;
  /** Unix seconds. */
  expires: number;
}

/**
 * Signed image links: `/v1/images/file/<id>.png?expires=<unix>&signature=<hex>`, the signature an
 * HMAC-SHA256 over the path and the expiry with a secret every instance shares. A link is either
 * exactly one the service signed, or refused: any change to the path, the expiry or the signature,
 * or either parameter missing or given twice, fails (other parameters, such as a cache buster a
 * client adds, are not part of what is signed).
 */
export class ImageLinks {
  private readonly secret: Buffer;
  constructor(secret: Buffer) {
    this.secret = secret;
  }

  /** The link (path and query) of a picture id, valid until `expires` (Unix seconds). */
  sign(id: string, expires: number): string {
    const path = `${IMAGE_FILE_PATH}${id}.png`;
    return `${path}?expires=${expires}&signature=${this.signature(path, String(expires))}`;
  }

  /** The id and expiry of a request URL (path and query) when its signature is right; undefined otherwise. */
  verify(url: string): VerifiedLink | undefined {
    const question = url.indexOf("?");
    const path = question === -1 ? url : url.slice(0, question);
    const match = FILE_PATH.exec(path);
    if (!match?.[1] || question === -1) return undefined;
    const query = new URLSearchParams(url.slice(question + 1));
    const expires = query.getAll("expires");
    const signature = query.getAll("signature");
    if (expires.length !== 1 || signature.length !== 1) return undefined;
    const [expiresText, given] = [expires[0] ?? "", signature[0] ?? ""];
    if (!EXPIRES.test(expiresText) || !SIGNATURE.test(given)) return undefined;
    const wanted = Buffer.from(this.signature(path, expiresText), "hex");
    if (!timingSafeEqual(wanted, Buffer.from(given, "hex"))) return undefined;
    return { id: match[1], expires: Number(expiresText) };
  }

  private signature(path: string, expires: string): string {
    return createHmac("sha256", this.secret).update(`${path}\n${expires}`).digest("hex");
  }
}
