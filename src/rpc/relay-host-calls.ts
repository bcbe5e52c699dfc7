import { fromBinary } from "@bufbuild/protobuf";
import { afterPendingIo } from "../domain/index.ts";
import type { OutgoingEvent, Principal, SessionStream } from "../session/index.ts";
import { SessionRequestSchema } from "../gen/roz/v1/agent_pb.js";
import { isEventFormat } from "./event-format.ts";
import { createStreamWriter } from "./response-writer.ts";
import { deliverToSession } from "./send-to-session.ts";
import { applyRequest, type StreamSessionDeps, startsWork } from "./stream-session.ts";

/**
 * The wire work of hosting streams relayed for other nodes' clients: their requests arrive as
 * protobuf bytes and are applied as a local call's would be; their responses leave as bytes.
 */
export function relayHostCalls(deps: Pick<StreamSessionDeps, "directory">) {
  return {
    async apply(stream: SessionStream, bytes: Uint8Array): Promise<void> {
      const request = fromBinary(SessionRequestSchema, bytes);
      if (startsWork(request)) await afterPendingIo();
      await applyRequest(stream, request, { attached: true }, {}, stream.session?.principal ?? { tenantId: "", scopes: [] });
    },
    deliver: (principal: Principal, sessionId: string, bytes: Uint8Array): Promise<number> =>
      deliverToSession(deps, principal, sessionId, fromBinary(SessionRequestSchema, bytes)),
    encoder: (format: string): ((item: OutgoingEvent) => Uint8Array[]) => createStreamWriter(isEventFormat(format) ? format : "flat", false).binary,
  };
}
