import type { AddressInfo } from "node:net";

/**
 * Where the links of mails point (the web chat): `app.public_url` when it is set, or else the
 * address Zona listens on (a wildcard address read as `localhost`), so that a plain start on any
 * `PORT` mails links that open. Behind a proxy the operator sets `public_url`.
 */
/** The http URL of a listening address; a wildcard address (every interface) is named `wildcardHost`. */
export function listenerUrl(address: AddressInfo, wildcardHost: string): string {
  const wildcard = address.address === "0.0.0.0" || address.address === "::";
  const host = wildcard ? wildcardHost : address.family === "IPv6" ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

export class PublicUrl {
  private readonly configured: string | undefined;
  private readonly port: number;
  private heard: string | undefined;

  /** `port`: the configured one, for links made before the server listens. */
  constructor(configured: string | undefined, port: number) {
    this.configured = configured;
    this.port = port;
  }

  /** The server listens at `address` (what `server.address()` says). */
  listening(address: AddressInfo | string | null): void {
    if (address === null || typeof address === "string") return;
    this.heard = listenerUrl(address, "localhost");
  }

  get(): string {
    return this.configured ?? this.heard ?? `http://localhost:${this.port}`;
  }
}
