import type { FastifyPluginAsync } from "fastify";
import type { Registry } from "prom-client";

export interface MetricsRoutesOptions {
  registry: Registry;
}

/** `GET /metrics`: Prometheus text exposition of this node's metrics (no key needed). */
export const metricsRoutes: FastifyPluginAsync<MetricsRoutesOptions> = async (app, { registry }) => {
  app.get("/metrics", { schema: { summary: "Prometheus metrics", tags: ["operations"], produces: ["text/plain"], security: [] } }, async (_request, reply) => {
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
};
