import type { FastifyInstance, FastifyRequest } from "fastify";
import { LabelCache } from "../metrics/label-cache.ts";
import type { MetricsRegistry } from "../metrics/metrics-registry.ts";
import { CLIENT_CLOSED_REQUEST, onUnfinishedRequest } from "./unfinished-requests.ts";

/** The route label of a request no route matched (its raw path would be unbounded). */
export const UNMATCHED_ROUTE = "unmatched";

/** What every answered request adds to the metrics: counts, durations, time to first token. */
export interface RequestMetricsDeps {
  metrics: MetricsRegistry;
  /** Whether a model id is in the current catalogue: only those become label values. */
  knownModel: (id: string) => boolean;
}

/**
 * Registers the request series and counts every request once it is answered (`onResponse`):
 * `zona_http_requests_total{route,method,status,model}`, `zona_http_request_duration_seconds
 * {route,method}` and, for streamed text, `zona_time_to_first_token_seconds{model,tier}`. The
 * route is Fastify's pattern, never the raw URL.
 */
export function installRequestMetrics(app: FastifyInstance, deps: RequestMetricsDeps): void {
  const requests = deps.metrics.counter(
    "zona_http_requests_total",
    "Requests answered, by route pattern, method, status and catalogue model.",
    ["route", "method", "status", "model"],
  );
  const duration = deps.metrics.histogram(
    "zona_http_request_duration_seconds",
    "Time from a request's arrival until its answer was sent, streams included.",
    ["route", "method"],
  );
  const firstToken = deps.metrics.histogram(
    "zona_time_to_first_token_seconds",
    "Time from a streamed text request's arrival until its first generated token was sent.",
    ["model", "tier"],
  );
  const requestChildren = new LabelCache((values) => requests.labels(...values));
  const durationChildren = new LabelCache((values) => duration.labels(...values));
  const firstTokenChildren = new LabelCache((values) => firstToken.labels(...values));

  const count = (request: FastifyRequest, status: number, elapsedMs: number) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const trace = request.trace;
    const model = trace?.model !== undefined && deps.knownModel(trace.model) ? trace.model : "";
    requestChildren.get(route, request.method, status, model).inc();
    durationChildren.get(route, request.method).observe(elapsedMs / 1000);
    if (trace?.firstTokenMs !== undefined && model !== "") {
      firstTokenChildren.get(model, trace.tier ?? "").observe(trace.firstTokenMs / 1000);
    }
  };
  app.addHook("onResponse", (request, reply, done) => {
    count(request, reply.statusCode, reply.elapsedTime);
    done();
  });
  onUnfinishedRequest(app, (request, elapsedMs) => count(request, CLIENT_CLOSED_REQUEST, elapsedMs));
}
