import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Config } from "../app/config.ts";
import type { CliOutput } from "./keys.ts";

/** How long the probe waits for `/healthz` before reporting the server unhealthy. */
const PROBE_TIMEOUT_MS = 2500;

/**
 * `roz healthcheck`: exits 0 when the server configured by this environment answers
 * `GET /healthz` with 200, else 1 with one line saying why. It follows `ROZ_PORT`, `ROZ_HOST`
 * and TLS (`ROZ_TLS_CERT`), so the image's HEALTHCHECK stays right whatever they are set to.
 */
export async function runHealthcheck(config: Config, io: CliOutput): Promise<number> {
  const tls = config.tlsCert !== undefined;
  // A wildcard address is reached through loopback; a specific one is probed as it is.
  const host = ["0.0.0.0", "::", "[::]", ""].includes(config.host) ? "127.0.0.1" : config.host.replace(/^\[(.*)\]$/, "$1");
  const url = `${tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${config.port}/healthz`;
  const status = await new Promise<number | string>((resolve) => {
    // Liveness only: the certificate may be self-signed or name another host.
    const req = (tls ? httpsRequest : httpRequest)(url, { method: "GET", timeout: PROBE_TIMEOUT_MS, rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)));
    req.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
  if (status === 200) return 0;
  io.err(`roz healthcheck: ${url}: ${typeof status === "number" ? `HTTP ${status}` : status}`);
  return 1;
}
