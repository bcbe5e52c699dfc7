import type { RoutePlugin } from "./schemas.ts";

export interface VersionOptions {
  version: string;
  /** What the server offers: API version, protocols, the default model. */
  info: () => { api: string; protocols: string[]; defaultModel: string; providers: string[]; store: string; bus: string; nodeId: string };
}

/** `GET /version` (under `/v1`): the server version and what it serves. */
export const versionRoutes: RoutePlugin<VersionOptions> = async (app, opts) => {
  app.get(
    "/version",
    {
      schema: {
        summary: "Server version and capabilities",
        tags: ["operations"],
        response: {
          200: {
            type: "object",
            properties: {
              name: { type: "string" },
              version: { type: "string" },
              api: { type: "string" },
              protocols: { type: "array", items: { type: "string" } },
              default_model: { type: "string" },
              providers: { type: "array", items: { type: "string" } },
              store: { type: "string" },
              bus: { type: "string" },
              node_id: { type: "string" },
              node: { type: "string" },
            },
            required: ["name", "version", "api"],
          },
        },
      },
    },
    async () => {
      const info = opts.info();
      return {
        name: "roz",
        version: opts.version,
        api: info.api,
        protocols: info.protocols,
        default_model: info.defaultModel,
        providers: info.providers,
        store: info.store,
        bus: info.bus,
        node_id: info.nodeId,
        node: process.version,
      };
    },
  );
};
