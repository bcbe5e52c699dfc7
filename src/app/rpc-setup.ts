import type { Http2ServerResponse } from "node:http2";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { FastifyInstance } from "fastify";
import type { Authenticator } from "../auth/index.ts";
import { AgentService, McpServerService } from "../gen/roz/v1/agent_pb.js";
import {
  AtCapRefusals,
  COMPRESS_MIN_BYTES,
  createAgentService,
  createMcpServerService,
  encodeGrpcMessagesOf,
  type RpcAuthenticator,
  screenToolLists,
} from "../rpc/index.ts";
import { registerReflection } from "../rpc/reflection/index.ts";
import type { SessionRelay } from "../cluster/index.ts";
import { StreamSlots } from "../session/index.ts";
import type { Teams } from "../teams/index.ts";
import type { Config } from "./config.ts";
import type { HttpServer } from "./http-server.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Mcp } from "./mcp-setup.ts";
import type { Metrics } from "./metrics.ts";
import { requestIdOf } from "./request-id.ts";
import { rpcContextValues } from "./rpc-context.ts";
import type { Sessions } from "./sessions-setup.ts";

/** The compressions RPC responses may use (connect's own default), negotiated per call. */
const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];

/**
 * What RPC calls get at the edge, before Connect sees them: gRPC messages written as they are
 * encoded, and over-cap tool lists cut before connect decodes them (decoding is what costs).
 */
export function registerRpcEdge(app: FastifyInstance, config: Pick<Config, "maxToolsPerRequest" | "maxMessageBytes">): void {
  app.addHook("onRequest", async (request, reply) => {
    const contentType = request.headers["content-type"];
    if (typeof contentType === "string" && /^application\/grpc(\+|;|$)/.test(contentType) && request.raw.httpVersionMajor === 2) {
      encodeGrpcMessagesOf(reply.raw as unknown as Http2ServerResponse);
    }
    // The route's path: a query string or a percent-encoded letter reach the same handler.
    const route = request.routeOptions.url;
    if (request.method === "POST" && route !== undefined) screenToolLists(request.raw, route, contentType, config.maxToolsPerRequest, config.maxMessageBytes);
  });
}

export interface RpcSetup {
  config: Config;
  http: HttpServer;
  sessions: Sessions;
  teams: Teams;
  mcp: Mcp;
  authenticator: Authenticator;
  authenticate: RpcAuthenticator;
  relay: SessionRelay | undefined;
  metrics: Metrics;
  lifecycle: Lifecycle;
}

/**
 * Serves `roz.v1.AgentService` and `roz.v1.McpServerService` (gRPC, gRPC-Web and Connect) with reflection. A key at its
 * stream cap is refused from the stream's headers, before routing. Team watches end at shutdown.
 */
export async function registerRpc({ config, http, sessions, teams, mcp, authenticator, authenticate, relay, metrics, lifecycle }: RpcSetup): Promise<void> {
  const revocationsOf = (keyId: string): number => authenticator.revocationsOf(keyId);
  const streamSlots = new StreamSlots(config.maxStreamsPerKey);
  const atCapRefusals = new AtCapRefusals({
    slots: streamSlots,
    trustMs: config.credentialRecheckMs,
    revocationsOf,
    defaultEventFormat: config.eventFormat,
    acceptCompression: ACCEPT_COMPRESSION,
  });
  http.answerEarlyWith((headers) => {
    const refusal = atCapRefusals.answer(headers);
    if (refusal === undefined) return undefined;
    metrics.refusedEarly(headers[":path"] ?? "");
    return { ...refusal, headers: { ...refusal.headers, "x-request-id": requestIdOf(headers) } };
  });
  const openWatches = new Set<AbortController>();
  lifecycle.onClose("team watches", () => {
    for (const watch of openWatches) watch.abort();
  });
  await http.fastify.register(fastifyConnectPlugin, {
    routes: (router) => {
      router.service(
        AgentService,
        createAgentService({
          session: sessions.deps,
          registry: sessions.registry,
          directory: sessions.directory,
          authenticate,
          openStreams: sessions.openStreams,
          defaultEventFormat: config.eventFormat,
          teams,
          openWatches,
          streamSlots,
          atCapRefusals,
          credentialRecheckMs: config.credentialRecheckMs,
          revocationsOf,
          onRevocation: (listener) => authenticator.onRevocation(listener),
          noteOperation: (operation) => http.noteOperation(operation),
          // A lost owner's sessions can be adopted once its heartbeat expired; allow a few heartbeats more.
          ...(relay ? { relay, relocateWithinMs: config.nodeExpiryMs + 3 * config.nodeHeartbeatMs } : {}),
        }),
      );
      router.service(McpServerService, createMcpServerService(mcp.servers, authenticate));
      registerReflection(router, [AgentService, McpServerService]);
    },
    readMaxBytes: config.maxMessageBytes,
    // The session writer leaves messages of this size on to connect, which compresses them.
    compressMinBytes: COMPRESS_MIN_BYTES,
    acceptCompression: ACCEPT_COMPRESSION,
    grpc: true,
    grpcWeb: true,
    connect: true,
    contextValues: rpcContextValues,
  });
}
