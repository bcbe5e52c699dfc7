import type { McpServers } from "../src/mcp/index.ts";
import { errorResponses, type RoutePlugin } from "./schemas.ts";

export interface McpOAuthRoutesOptions {
  servers: McpServers;
}

const callbackQuery = {
  type: "object",
  properties: {
    state: { type: "string", minLength: 1, maxLength: 512 },
    code: { type: "string", minLength: 1, maxLength: 4096 },
    error: { type: "string", maxLength: 256 },
    error_description: { type: "string", maxLength: 1024 },
  },
  required: ["state"],
} as const;

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c);

const page = (name: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>roz: MCP server authorized</title></head>` +
  `<body><h1>Authorized</h1><p>roz can now use the MCP server <b>${escapeHtml(name)}</b>. You can close this window.</p></body></html>`;

/**
 * `GET /mcp/oauth/callback` (under `/v1`, session-behaviour.md §12): where an MCP server's
 * authorization server sends the user's browser back. It needs no API key — the `state` it
 * carries is the credential: bound to one pending approval, single use, expiring. The answer
 * is a small page for a browser, JSON otherwise; a bad, reused or expired state is a 4xx JSON
 * error. It never shows a token.
 */
export const mcpOAuthRoutes: RoutePlugin<McpOAuthRoutesOptions> = async (app, { servers }) => {
  app.get(
    "/mcp/oauth/callback",
    {
      schema: {
        summary: "OAuth redirect target of MCP servers (no API key: the state is checked)",
        tags: ["mcp servers"],
        security: [],
        querystring: callbackQuery,
        response: {
          200: {
            content: {
              "application/json": {
                schema: { type: "object", properties: { authorized: { type: "boolean" }, name: { type: "string" } }, required: ["authorized", "name"] },
              },
              "text/html": { schema: { type: "string" } },
            },
          },
          ...errorResponses(404, 410, 412, 502),
        },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const server = await servers.authorize({
        state: q.state,
        ...(q.code !== undefined ? { code: q.code } : {}),
        ...(q.error !== undefined ? { error: q.error } : {}),
        ...(q.error_description !== undefined ? { errorDescription: q.error_description } : {}),
      });
      // The URL carried a code: it is not cached, and not sent on as a referrer.
      void reply.header("cache-control", "no-store").header("referrer-policy", "no-referrer");
      if (request.headers.accept?.includes("text/html") === true) return reply.type("text/html; charset=utf-8").send(page(server.name));
      return { authorized: true, name: server.name };
    },
  );
};
