import { type Listening, startListener } from "./children.ts";

/**
 * Starts bench/stack-floor-process.ts (a bare Fastify + undici proxy to the engine) with the same
 * V8 flag as Zona, and waits for the url it prints. Pin it to Zona's core: it is measured in
 * Zona's place, and stays idle while Zona is measured.
 */
export function startStackFloor(options: {
  engineUrl: string;
  cpu: number | undefined;
  cwd: string;
}): Promise<Listening> {
  return startListener(
    "stack-floor",
    ["--max-semi-space-size=8", "bench/stack-floor-process.ts", options.engineUrl],
    { cpu: options.cpu, cwd: options.cwd },
  );
}
