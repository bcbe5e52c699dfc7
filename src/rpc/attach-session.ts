import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { type RozError, toRozError } from "../errors/index.ts";
import { isUuid, SessionStream } from "../session/index.ts";
import type { AttachSessionRequest, SessionResponse } from "../gen/roz/v1/agent_pb.js";
import { toConnectError } from "./connect-errors.ts";
import { commandFromWire } from "./from-wire.ts";
import { StreamRoute } from "./stream-route.ts";
import { credentialCheck } from "./credential-recheck.ts";
import { openSessionCall, type SessionCall, type StreamSessionDeps, writeStream } from "./stream-session.ts";

/** How often, at least this far apart, an AttachSession stream re-checks its key (it sends no requests to check on). */
const MIN_ATTACHED_RECHECK_MS = 250;

/**
 * AttachSession (session-behaviour.md §6, browsers): the downlink of a session as a server
 * stream. `start` opens a new session exactly as StreamSession's `start` does (same
 * validation, events and fatal errors); `session_id` re-attaches from `after_seq`. Requests
 * come through SendToSession. The stream has no request side, so it never half-closes: it
 * ends with its session, or detaches when the client goes away. Like StreamSession it has
 * an event format, a stream slot of its key, and its key re-checked while it is open.
 */
export function createAttachSession(deps: StreamSessionDeps) {
  return async function* attachSession(request: AttachSessionRequest, ctx: HandlerContext): AsyncGenerator<SessionResponse> {
    const call = yield* openSessionCall(deps, ctx);
    const target = request.target;
    if (target.case === undefined) {
      call.release();
      throw new ConnectError("AttachSessionRequest needs start or session_id", Code.InvalidArgument);
    }
    const stream = new SessionStream(deps.session, deps.registry, deps.directory, call.principal);
    const route = new StreamRoute(deps, call.principal, call.format, ctx.signal, stream);
    if (target.case === "start") {
      let command;
      try {
        command = commandFromWire({ $typeName: "roz.v1.SessionRequest", request: target } as Parameters<typeof commandFromWire>[0]);
      } catch (err) {
        stream.close();
        call.release();
        throw toConnectError(toRozError(err, "malformed_message"));
      }
      deps.noteOperation?.({ rpc: "AttachSession", request: "start", tenantId: call.principal.tenantId, keyId: call.principal.keyId });
      if (command.type === "start") void stream.start(command);
    } else {
      const afterSeq = request.afterSeq;
      if (afterSeq !== undefined && afterSeq > BigInt(Number.MAX_SAFE_INTEGER)) {
        stream.close();
        call.release();
        throw new ConnectError(`after_seq ${afterSeq} is out of range`, Code.InvalidArgument);
      }
      deps.noteOperation?.({ rpc: "AttachSession", request: "resume", tenantId: call.principal.tenantId, keyId: call.principal.keyId });
      const located = deps.relay && isUuid(target.value) ? await deps.directory.find(call.principal, target.value).catch(() => undefined) : undefined;
      if (deps.relay && located?.kind === "remote") {
        try {
          route.relayTo(await deps.relay.open(located.nodeId, call.principal, target.value, Number(afterSeq ?? 0n), call.format));
        } catch (err) {
          void stream.fail(toRozError(err));
        }
      } else {
        void stream.resume(target.value, Number(afterSeq ?? 0n));
      }
    }
    const stopRecheck = recheckWhileOpen(deps, call, (error) => route.fail(error));
    try {
      yield* writeStream(route, call, ctx);
    } finally {
      stopRecheck();
    }
  };
}

/**
 * Revoking or expiring a key reaches an attached stream as it reaches a StreamSession (whose
 * check runs before each request): this stream has no requests, so its key is re-checked
 * every `credentialRecheckMs` while it is open, and at once when a key is revoked or rotated
 * through this process; a refused key ends it with `unauthenticated`.
 */
function recheckWhileOpen(
  deps: StreamSessionDeps,
  call: Pick<SessionCall, "authorization" | "principal">,
  fail: (error: RozError) => Promise<void>,
): () => void {
  if (deps.credentialRecheckMs === undefined) return () => {};
  const { keyId } = call.principal;
  const stillAuthorized = credentialCheck(deps, call.authorization, keyId);
  let checking = false;
  /** A revocation arrived while a check ran (which may have read the key before it): check again after it. */
  let again = false;
  const recheck = (): void => {
    if (checking) return;
    checking = true;
    void Promise.resolve(stillAuthorized())
      .then((revoked) => (revoked ? fail(revoked) : undefined))
      .catch((err: unknown) => deps.session.log.warn({ err }, "could not re-check an attached stream's key"))
      .finally(() => {
        checking = false;
        if (again) {
          again = false;
          recheck();
        }
      });
  };
  const timer = setInterval(recheck, Math.max(MIN_ATTACHED_RECHECK_MS, deps.credentialRecheckMs));
  timer.unref();
  const onRevoked = (revokedKeyId: string): void => {
    if (revokedKeyId !== keyId) return;
    if (checking) again = true;
    else recheck();
  };
  const unsubscribe = deps.onRevocation?.(onRevoked) ?? (() => {});
  return () => {
    clearInterval(timer);
    unsubscribe();
  };
}
