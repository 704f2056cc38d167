import type { FastifyInstance } from "fastify";

/** One dependency `GET /readyz` asks; `check` rejects with the reason it is not usable. */
export interface ReadinessCheck {
  /** Names the dependency in the reasons (`database`, `redis (rate limits)`). */
  name: string;
  check(): Promise<void>;
}

// A load balancer's probe usually gives up after 1 s: a hanging dependency must not make it wait.
const CHECK_TIMEOUT_MS = 800;

/**
 * `GET /healthz`: the process is alive (200 `{"status":"ok"}`). `GET /readyz`: it can serve,
 * 200 `{"status":"ready"}` when every check passes within 800 ms, else 503
 * `{"status":"unavailable","reasons":["database: ..."]}`. No key, no limit, no access log line.
 */
export async function healthRoutes(
  app: FastifyInstance,
  options: { checks: () => readonly ReadinessCheck[] },
): Promise<void> {
  const quiet = { config: { quiet: true } };
  app.get("/healthz", quiet, (_request, reply) =>
    reply.header("cache-control", "no-store").send({ status: "ok" }),
  );
  app.get("/readyz", quiet, async (_request, reply) => {
    const reasons = await failures(options.checks());
    reply.header("cache-control", "no-store");
    if (reasons.length === 0) return reply.send({ status: "ready" });
    return reply.code(503).send({ status: "unavailable", reasons });
  });
}

async function failures(checks: readonly ReadinessCheck[]): Promise<string[]> {
  const outcomes = await Promise.all(
    checks.map(async ({ name, check }) => {
      const reason = await bounded(check);
      return reason === undefined ? undefined : `${name}: ${reason}`;
    }),
  );
  return outcomes.filter((reason) => reason !== undefined);
}

/** Runs a check with a time limit; resolves with the reason it failed, or undefined. */
async function bounded(check: () => Promise<void>): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${CHECK_TIMEOUT_MS} ms`), CHECK_TIMEOUT_MS);
  });
  const ran = check().then(
    () => undefined,
    (error: unknown) => (error instanceof Error && error.message !== "" ? error.message : String(error)),
  );
  try {
    return await Promise.race([ran, late]);
  } finally {
    clearTimeout(timer);
  }
}
