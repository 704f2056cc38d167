import type { Socket } from "node:net";
import type { Redis } from "ioredis";

/**
 * Makes every command a connection sends in one round of the event loop leave in one socket write,
 * in that round's check phase. ioredis writes each command as it is sent, and on loopback a write
 * costs the kernel's delivery to Redis as well: under load, the many requests read in one poll
 * phase each sent their own. Corking until `setImmediate` adds no wait at one request at a time:
 * the check phase follows the poll phase that read the request.
 */
export function writePerRound(redis: Redis): void {
  // Each connection (a reconnect opens a new socket) gets its own gathering.
  redis.on("connect", () => gatherWrites((redis as unknown as { stream: Socket }).stream));
}

function gatherWrites(socket: Socket): void {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  // ioredis calls `stream.write` for every command and has no hook of its own.
  (socket as unknown as { write: (...args: unknown[]) => boolean }).write = (...args) => {
    if (!corked) {
      corked = true;
      socket.cork();
      setImmediate(uncork);
    }
    return write(...args);
  };
}
