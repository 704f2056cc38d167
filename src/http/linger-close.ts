import type { ServerResponse } from "node:http";

// Enough for a client on any network to read the answer and stop sending.
const LINGER_MS = 2_000;

/**
 * Lets the client of an answer that closes the connection before its request body was all read
 * (413: over 64 MB) read that answer. Node closes such a socket at once, and the client, still
 * sending, then meets a reset that loses the answer (an SDK sees EPIPE, not 413). Here the server's
 * side ends after the answer and what the client still sends is read and dropped, as nginx's
 * lingering close does, until the client closes or for at most 2 s.
 */
export function lingerBeforeClose(response: ServerResponse): void {
  const socket = response.socket as (ServerResponse["socket"] & { destroySoon?: () => void }) | null;
  if (!socket) return;
  socket.destroySoon = () => {
    socket.end();
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once("close", () => clearTimeout(timer));
    socket.once("end", () => socket.destroy());
  };
}
