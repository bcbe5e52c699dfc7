import type {} from "@fastify/swagger";
import type { FastifyPluginAsync } from "fastify";

/** `GET /openapi.json`: the OpenAPI document generated from every route's schema. */
export const openapiRoutes: FastifyPluginAsync = async (app) => {
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
};
