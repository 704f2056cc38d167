import type { Server } from "node:http";
import type { Socket } from "node:net";

/** How long a client may take over its side of an exchange before its connection is closed. */
export interface ClientTimeouts {
  /** From the first byte of a request (or the connection, for the first one) to the end of its headers. */
  headersMs: number;
  /** From the first byte of a request to the end of its body: bounds a body sent a byte at a time. */
  requestMs: number;
  /** An answer the client takes no byte of for this long (its TCP window stays shut). */
  stallMs: number;
}

/**
 * The limits in force. Node's own defaults are 60 s for the headers, checked only every 30 s, and
 * Fastify turns the request limit off: a body sent a byte a second held its connection for ever.
 * The headers of a real client come in one packet; 300 s for a body is Node's default (64 MB at
 * 1.7 Mbit/s); 60 s without taking a byte of an answer is nginx's `send_timeout`.
 */
export const CLIENT_TIMEOUTS: ClientTimeouts = { headersMs: 20_000, requestMs: 300_000, stallMs: 60_000 };

/** How often the limits are checked: a connection is closed at most this much after its limit. */
export const CHECK_EVERY_MS = 1_000;

const stallLimits = new WeakMap<Server, number>();

/**
 * Sets the limits of a server (at start, or later: they apply from the next check on). The headers
 * limit never exceeds the request limit, as Node requires.
 */
export function applyClientTimeouts(server: Server, timeouts: ClientTimeouts = CLIENT_TIMEOUTS): void {
  server.requestTimeout = timeouts.requestMs;
  server.headersTimeout = Math.min(timeouts.headersMs, timeouts.requestMs);
  stallLimits.set(server, timeouts.stallMs);
}

/**
 * Closes the connection of an answer its client has stopped reading: bytes wait to be sent and none
 * has left for the stall limit. Backpressure keeps the memory of such an answer small, but without
 * this the stream would keep its engine request, its reservation and its socket as long as the
 * client liked. Closing it ends the stream as a client that leaves does (upstream cancelled, the
 * usage settled as partial). Connections are watched, not requests: nothing is added per request.
 */
export function closeStalledAnswers(server: Server): void {
  const watched = new Map<Socket, { sent: number; since: number }>();
  server.on("connection", (socket: Socket) => {
    watched.set(socket, { sent: 0, since: performance.now() });
    socket.once("close", () => watched.delete(socket));
  });
  const timer = setInterval(() => {
    const limit = stallLimits.get(server) ?? CLIENT_TIMEOUTS.stallMs;
    const now = performance.now();
    for (const [socket, watch] of watched) {
      // Bytes the kernel took: what was written less what still waits for the client's window.
      const sent = socket.bytesWritten - socket.writableLength;
      if (socket.writableLength === 0 || sent !== watch.sent) {
        watch.sent = sent;
        watch.since = now;
      } else if (now - watch.since >= limit) {
        socket.destroy();
      }
    }
  }, CHECK_EVERY_MS);
  timer.unref();
  server.once("close", () => clearInterval(timer));
}
