import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { toRozError } from "../errors/index.ts";
import { SessionStream } from "../session/index.ts";
import type { AttachSessionRequest, SessionResponse } from "../gen/roz/v1/agent_pb.js";
import { toConnectError } from "./connect-errors.ts";
import { commandFromWire } from "./from-wire.ts";
import { authenticateSessionCall, type StreamSessionDeps, writeStream } from "./stream-session.ts";

/**
 * AttachSession (session-behaviour.md §6, browsers): the downlink of a session as a server
 * stream. `start` opens a new session exactly as StreamSession's `start` does (same
 * validation, events and fatal errors); `session_id` re-attaches from `after_seq`. Requests
 * come through SendToSession. The stream has no request side, so it never half-closes: it
 * ends with its session, or detaches when the client goes away.
 */
export function createAttachSession(deps: StreamSessionDeps) {
  return async function* attachSession(request: AttachSessionRequest, ctx: HandlerContext): AsyncGenerator<SessionResponse> {
    const principal = yield* authenticateSessionCall(deps, ctx);
    const target = request.target;
    if (target.case === undefined) throw new ConnectError("AttachSessionRequest needs start or session_id", Code.InvalidArgument);
    const stream = new SessionStream(deps.session, deps.registry, deps.directory, principal);
    if (target.case === "start") {
      let command;
      try {
        command = commandFromWire({ $typeName: "roz.v1.SessionRequest", request: target } as Parameters<typeof commandFromWire>[0]);
      } catch (err) {
        stream.close();
        throw toConnectError(toRozError(err, "malformed_message"));
      }
      if (command.type === "start") void stream.start(command);
    } else {
      const afterSeq = request.afterSeq;
      if (afterSeq !== undefined && afterSeq > BigInt(Number.MAX_SAFE_INTEGER)) {
        stream.close();
        throw new ConnectError(`after_seq ${afterSeq} is out of range`, Code.InvalidArgument);
      }
      void stream.resume(target.value, Number(afterSeq ?? 0n));
    }
    yield* writeStream(stream, deps, ctx);
  };
}
