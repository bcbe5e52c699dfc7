import type { Server } from "node:http";
import fastify, { type FastifyInstance } from "fastify";
import { OnePortServer, type OnePortOptions } from "../transport/index.ts";
import type { Config } from "./config.ts";
import { EventLoopWatchdog, type Operation } from "./event-loop-watchdog.ts";
import type { Lifecycle } from "./lifecycle.ts";
import { loggableUrl, loggerOptions } from "./logger.ts";
import type { Metrics } from "./metrics.ts";
import { requestIdOf } from "./request-id.ts";
import { RequestLog } from "./request-log.ts";
import { frameworkErrorReply } from "./rest-errors.ts";
import { listenFailure, readSettingFile } from "./startup-errors.ts";

/** The Fastify instance on the one-port server (HTTP/2 and HTTP/1.1 on one port), with its guards. */
export interface HttpServer {
  readonly fastify: FastifyInstance;
  /** Decides which new HTTP/2 streams are answered from their headers; until set, every stream is dispatched. */
  answerEarlyWith(answer: OnePortOptions["answerEarly"]): void;
  /** Records an operation the event-loop watchdog names when the loop was blocked. */
  noteOperation(operation: Operation): void;
  /** Listens on the configured host and port; resolves with the base URL. */
  listen(): Promise<string>;
}

/**
 * Builds the server; its shutdown steps stop accepting, drain the connections and close Fastify.
 * `logIds`: the ids of the active span, added to every log line (tracing).
 */
export function createHttpServer(config: Config, metrics: Metrics, lifecycle: Lifecycle, logIds?: () => Record<string, string>): HttpServer {
  const tls =
    config.tlsCert && config.tlsKey ? { cert: readSettingFile("ROZ_TLS_CERT", config.tlsCert), key: readSettingFile("ROZ_TLS_KEY", config.tlsKey) } : undefined;
  let onePort: OnePortServer | undefined;
  let answerEarly: OnePortOptions["answerEarly"];
  const app = fastify({
    logger: loggerOptions(config, logIds),
    // Request lines at debug; failed and slow requests at info.
    logController: new RequestLog(),
    genReqId: (req) => requestIdOf(req.headers),
    bodyLimit: config.maxMessageBytes,
    frameworkErrors: frameworkErrorReply,
    serverFactory: (handler) => {
      onePort = new OnePortServer(handler as unknown as ConstructorParameters<typeof OnePortServer>[0], {
        ...(tls ? { tls } : {}),
        maxConcurrentStreams: config.maxConcurrentStreams,
        pingIntervalMs: config.http2PingIntervalMs,
        handshakeTimeoutMs: config.handshakeTimeoutMs,
        headersTimeoutMs: config.headersTimeoutMs,
        maxConnectionsPerAddress: config.maxConnectionsPerAddress,
        maxStreamsPerSecond: config.maxStreamsPerSecond,
        maxResetsPerSecond: config.maxResetsPerSecond,
        maxDrainBytes: config.maxMessageBytes,
        answerEarly: (headers) => answerEarly?.(headers),
      });
      return onePort.server as unknown as Server;
    },
  });
  // Started by listen(): start-up (module loading, migrations) is not a client's block.
  let watchdog: EventLoopWatchdog | undefined;
  lifecycle.onClose("event-loop watchdog", () => watchdog?.stop());
  lifecycle.onClose("listener", () => void onePort?.server.close());
  lifecycle.onClose("connections", () => onePort?.drain(0, () => {}));
  lifecycle.onClose("fastify", () => app.close());
  app.addHook("onRequest", async (request, reply) => {
    watchdog?.note({ http: request.method, url: loggableUrl(request.url).slice(0, 200), requestId: request.id });
    void reply.header("x-request-id", request.id);
  });

  return {
    fastify: app,
    answerEarlyWith: (answer) => {
      answerEarly = answer;
    },
    noteOperation: (operation) => watchdog?.note(operation),
    async listen() {
      await app.ready();
      // The one-port server is bound here rather than by `app.listen()`: Fastify's own
      // "Server listening at http://…" lines ignore TLS behind a serverFactory and repeat per
      // interface; main.ts logs the one correct line.
      await new Promise<void>((resolve, reject) => {
        const server = app.server;
        const onError = (err: Error): void => reject(listenFailure(err, config));
        server.once("error", onError);
        server.listen({ host: config.host, port: config.port }, () => {
          server.off("error", onError);
          resolve();
        });
      });
      watchdog ??= new EventLoopWatchdog({ thresholdMs: 100, log: app.log, blocks: metrics.eventLoopBlocks });
      const address = app.server.address();
      const port = typeof address === "object" && address ? address.port : config.port;
      const host = config.host.includes(":") ? `[${config.host}]` : config.host;
      return `${tls ? "https" : "http"}://${host}:${port}`;
    },
  };
}
