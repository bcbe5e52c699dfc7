import { existsSync } from "node:fs";
import { join } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyPluginAsync } from "fastify";

export interface ConsoleRoutesOptions {
  /** The folder of the built console (`index.html` and `assets/`). */
  root: string;
}

/**
 * The console is served under a policy that allows only its own files and calls to this
 * origin: no inline script or style, no frames, no other hosts (the API is on the same port).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Built assets carry a content hash in their name (`assets/app-3FQ2….js`): cacheable forever. */
const hashed = /[\\/]assets[\\/][^\\/]+-[A-Z0-9]{8,}\.\w+$/;

/**
 * `GET /` and the console's files, from the build output. Only files that exist at start-up get
 * a route (no wildcard), so every other path keeps its REST or RPC answer (or the JSON 404).
 * `index.html` is revalidated on every load (`no-cache`) so a new build is picked up at once.
 */
export const consoleRoutes: FastifyPluginAsync<ConsoleRoutesOptions> = async (app, { root }) => {
  if (!existsSync(join(root, "index.html"))) {
    app.log.warn({ root }, "web console not built: run `npm run build:web` (GET / answers 404 until then)");
    return;
  }
  await app.register(fastifyStatic, {
    root,
    prefix: "/",
    wildcard: false,
    index: "index.html",
    decorateReply: false,
    schemaHide: true,
    cacheControl: false,
    dotfiles: "deny",
    setHeaders: (reply, path) => {
      reply.header("cache-control", hashed.test(path) ? "public, max-age=31536000, immutable" : "no-cache");
      reply.header("content-security-policy", CONSOLE_CSP);
      reply.header("x-content-type-options", "nosniff");
      reply.header("referrer-policy", "no-referrer");
      reply.header("cross-origin-opener-policy", "same-origin");
    },
  });
};
