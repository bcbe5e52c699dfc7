import { create, toBinary } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { afterPendingIo, type TraceContext } from "../domain/index.ts";
import { RozError, toRozError } from "../errors/index.ts";
import { isUuid, ownerWaitedFor, type Principal } from "../session/index.ts";
import {
  type SendToSessionRequest,
  type SendToSessionResponse,
  SendToSessionResponseSchema,
  type SessionRequest,
  SessionRequestSchema,
} from "../gen/roz/v1/agent_pb.js";
import { toConnectError } from "./connect-errors.ts";
import { commandFromWire } from "./from-wire.ts";
import { traceContextOf, withTrace } from "./trace-context.ts";
import { type StreamSessionDeps, startsWork } from "./stream-session.ts";

/**
 * SendToSession (session-behaviour.md §6, browsers): delivers one request to a session, as
 * if an attached stream had sent it; its in-band answers (errors, pongs) go to the attached
 * streams. The call itself fails only for an unknown or another tenant's session
 * (NOT_FOUND), an ended one (FAILED_PRECONDITION) or a malformed request, `start` or
 * `resume` (INVALID_ARGUMENT). Returns the session's last seq when the request was accepted.
 * Each call is authenticated on its own, so a revoked or expired key is refused at once.
 */
export function createSendToSession(deps: StreamSessionDeps) {
  return async function sendToSession(request: SendToSessionRequest, ctx: HandlerContext): Promise<SendToSessionResponse> {
    try {
      const principal = await deps.authenticate(ctx.requestHeader.get("authorization"), "sessions");
      if (!isUuid(request.sessionId)) throw new RozError("invalid_argument", `session_id "${request.sessionId}" is not a UUID`);
      const kind = request.request?.request.case;
      if (!request.request || kind === undefined) throw new RozError("invalid_argument", "request is empty");
      if (kind === "start" || kind === "resume") throw new RozError("invalid_argument", `${kind} cannot be sent to a session; use AttachSession`);
      const lastSeq = await deliverToSession(deps, principal, request.sessionId, request.request, deps.session.tracing && traceContextOf(ctx.requestHeader));
      return create(SendToSessionResponseSchema, { lastSeq: BigInt(lastSeq) });
    } catch (err) {
      throw toConnectError(toRozError(err));
    }
  };
}

/**
 * Hands one request to a session of `principal`'s tenant: to the live session here, or to the
 * node that runs it (relayed). Resolves with the session's last seq as of acceptance.
 */
export async function deliverToSession(
  deps: Pick<StreamSessionDeps, "directory" | "relay" | "noteOperation">,
  principal: Principal,
  sessionId: string,
  request: SessionRequest,
  trace?: TraceContext,
): Promise<number> {
  if (startsWork(request)) await afterPendingIo();
  const command = withTrace(commandFromWire(request), trace);
  deps.noteOperation?.({ rpc: "SendToSession", request: command.type, tenantId: principal.tenantId, keyId: principal.keyId });
  const located = await deps.directory.find(principal, sessionId);
  if (located.kind === "remote") {
    if (!deps.relay) throw ownerWaitedFor(located.nodeId);
    return deps.relay.deliver(located.nodeId, principal, sessionId, toBinary(SessionRequestSchema, request));
  }
  if (located.kind === "ended" || (located.session.status !== "active" && located.session.status !== "detached")) {
    throw new RozError("session_ended", `session "${sessionId}" has ended`);
  }
  const lastSeq = located.session.lastSeq;
  await located.session.handle(command);
  return lastSeq;
}
