// The stack floor of the gateway benchmark: the least a gateway built on Zona's stack can do per
// request (Fastify parses the JSON body, undici forwards it over a keep-alive pool, the answer is
// parsed and sent again as JSON), with no auth, limits, billing or validation. A streamed request
// (`"stream": true`) is forwarded as a bare proxy would: the engine's SSE body is piped to the
// client as it arrives, unparsed, with the engine's status and content type. Run like the fake
// engine: `node bench/stack-floor-process.ts <engine url>`; prints `{"url": ...}` once listening
// and exits on SIGTERM, SIGINT or when its stdin closes.
import Fastify from "fastify";
import { Pool } from "undici";
import { listenUntilStopped } from "./listen-until-stopped.ts";

const upstream = process.argv[2];
if (!upstream) throw new Error("usage: stack-floor-process.ts <engine url>");
const pool = new Pool(upstream, { connections: 1024, pipelining: 1 });
const app = Fastify({ logger: false });

app.post("/v1/chat/completions", async (request, reply) => {
  const answer = await pool.request({
    method: "POST",
    path: "/v1/chat/completions",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(request.body),
  });
  reply.code(answer.statusCode);
  if ((request.body as { stream?: unknown } | null)?.stream === true) {
    const type = answer.headers["content-type"];
    if (typeof type === "string") reply.header("content-type", type);
    // Fastify pipes a stream to the socket chunk by chunk: each SSE event leaves when it arrives.
    return reply.send(answer.body);
  }
  return await answer.body.json();
});

const url = await app.listen({ port: 0, host: "127.0.0.1" });

listenUntilStopped(url, async () => {
  await app.close();
  await pool.close();
});
