/**
 * The transport baseline: a bare connect-node HTTP/2 (h2c) server with the same
 * AgentService descriptor whose StreamSession answers Ping with Pong, and a UserMessage
 * `flood N` with N TextDeltas and a TurnComplete as fast as the transport takes them;
 * `pace N R` with N TextDeltas paced at R/s, each carrying its send stamp (timed-frames.ts).
 * Whatever our server spends beyond this is the cost of its own layers.
 */
import { createServer } from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { monoMs, sleep } from "./support.ts";
import { AgentService, type SessionRequest, type SessionResponse, SessionResponseSchema } from "../src/gen/roz/v1/agent_pb.js";

export interface BareServer {
  url: string;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1, port 0, with gRPC, gRPC-Web and Connect enabled like ours. */
export async function startBareServer(): Promise<BareServer> {
  const handler = connectNodeAdapter({
    routes: (router) =>
      router.service(AgentService, {
        async *streamSession(requests: AsyncIterable<SessionRequest>): AsyncGenerator<SessionResponse> {
          let seq = 0n;
          for await (const request of requests) {
            if (request.request.case === "ping") yield create(SessionResponseSchema, { response: { case: "pong", value: {} } });
            const content = request.request.case === "userMessage" ? request.request.value.content : "";
            const pace = /^pace (\d+) (\d+)$/.exec(content);
            if (pace) {
              const started = monoMs();
              for (let i = 0; i < Number(pace[1]); i++) {
                const due = started + (i * 1000) / Number(pace[2]) - monoMs();
                if (due > 0) await sleep(due);
                yield create(SessionResponseSchema, {
                  seq: ++seq,
                  response: { case: "textDelta", value: { messageId: "bench", content: `${monoMs().toFixed(3)};` } },
                });
              }
              yield create(SessionResponseSchema, { seq: ++seq, response: { case: "turnComplete", value: { messageId: "bench", stopReason: "end_turn" } } });
            }
            const flood = /^flood (\d+)$/.exec(content);
            if (!flood) continue;
            for (let i = 0; i < Number(flood[1]); i++) {
              yield create(SessionResponseSchema, { seq: ++seq, response: { case: "textDelta", value: { messageId: "bench", content: "tok " } } });
            }
            yield create(SessionResponseSchema, { seq: ++seq, response: { case: "turnComplete", value: { messageId: "bench", stopReason: "end_turn" } } });
          }
        },
      }),
  });
  const server = createServer(handler);
  const sessions = new Set<import("node:http2").ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  };
}
