import type { FastifyInstance } from "fastify";
import { invalidRequest } from "../../errors/catalogue.ts";
import type { ConfigReloader } from "../../services/config-reloader.ts";

/**
 * `POST /admin/v1/reload`: re-reads the configuration like SIGHUP. 200 with what changed; 400
 * `invalid_configuration` naming every bad field when the file cannot be used (nothing changed).
 */
export async function adminReloadRoutes(app: FastifyInstance, options: { reloader: ConfigReloader }) {
  app.post("/reload", async () => {
    const outcome = await options.reloader.reload("api");
    if (!outcome.applied) {
      throw invalidRequest(
        `The configuration was not reloaded; nothing changed. ${outcome.error ?? ""}`.trim(),
        {
          code: "invalid_configuration",
        },
      );
    }
    return {
      object: "reload",
      applied: true,
      changes: outcome.changes,
      restart_required: outcome.restartRequired,
    };
  });
}
