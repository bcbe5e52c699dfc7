import type { RoutePlugin } from "./schemas.ts";

export interface HealthOptions {
  /** Throws or resolves with a list of failed dependencies (empty = ready). */
  readiness: () => Promise<{ name: string; ok: boolean; error?: string }[]>;
}

const checkSchema = {
  type: "object",
  properties: { name: { type: "string" }, ok: { type: "boolean" }, error: { type: "string" } },
  required: ["name", "ok"],
} as const;

/** `GET /healthz` (the process answers) and `GET /readyz` (its dependencies answer). */
export const healthRoutes: RoutePlugin<HealthOptions> = async (app, opts) => {
  app.get(
    "/healthz",
    {
      schema: {
        summary: "Liveness: the process is up",
        tags: ["operations"],
        response: { 200: { type: "object", properties: { status: { type: "string" } }, required: ["status"] } },
      },
    },
    async () => ({ status: "ok" }),
  );
  app.get(
    "/readyz",
    {
      schema: {
        summary: "Readiness: the store (and bus) answer and the server is not draining",
        tags: ["operations"],
        response: {
          200: { type: "object", properties: { status: { type: "string" }, checks: { type: "array", items: checkSchema } } },
          503: { type: "object", properties: { status: { type: "string" }, checks: { type: "array", items: checkSchema } } },
        },
      },
    },
    async (_request, reply) => {
      const checks = await opts.readiness();
      const ready = checks.every((c) => c.ok);
      return reply.status(ready ? 200 : 503).send({ status: ready ? "ready" : "unavailable", checks });
    },
  );
};
