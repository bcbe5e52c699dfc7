import type { AddressInfo } from "node:net";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { fastify } from "fastify";
import { AgentService } from "../../src/gen/roz/v1/agent_pb.js";
import { registerReflection } from "../../src/rpc/reflection/index.ts";

/** A real h2c server on 127.0.0.1 serving AgentService (stubbed) plus reflection. */
export interface ReflectionTestServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** Fixed time the WatchTeam stub reports, so a test can check the Timestamp round trip. */
export const stubEventTime = new Date("2024-05-06T07:08:09Z");

/**
 * Starts Fastify over cleartext HTTP/2 with the Connect plugin. WatchTeam is a one-event stub
 * (the real implementation lives elsewhere): it lets `buf curl` prove that a schema resolved
 * through reflection, Timestamp import included, encodes and decodes a real call.
 */
export async function startReflectionServer(): Promise<ReflectionTestServer> {
  const app = fastify({ http2: true });
  await app.register(fastifyConnectPlugin, {
    routes(router) {
      router.service(AgentService, {
        async *watchTeam(request) {
          yield {
            seq: 1n,
            time: timestampFromDate(stubEventTime),
            event: { case: "workerStarted", value: { workerId: `w-${request.taskId}`, hostId: "h1" } },
          };
        },
      });
      registerReflection(router, [AgentService]);
    },
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, port, close: () => app.close() };
}
