import type { HandlerContext } from "@connectrpc/connect";
import { afterPendingIo, type TraceContext } from "../domain/index.ts";
import { toRozError } from "../errors/index.ts";
import { type Principal, type SessionCommand, SessionStream } from "../session/index.ts";
import type { SessionRequest, SessionResponse } from "../gen/roz/v1/agent_pb.js";
import { fromConnectError, toConnectError } from "./connect-errors.ts";
import { rawRequestKey } from "./context-values.ts";
import type { EventFormat } from "./event-format.ts";
import { credentialCheck } from "./credential-recheck.ts";
import { commandFromWire } from "./from-wire.ts";
import { traceContextOf, withTrace } from "./trace-context.ts";
import { encoderOf, refusalResponses } from "./responses.ts";
import { EnvelopeWriter } from "./envelope-writer.ts";
import { createStreamWriter, isJsonCall, preEncoded, type StreamWriter } from "./response-writer.ts";
import { relayedResponse } from "./relay-port.ts";
import { type ApplyLocally, type StepResult, StreamRoute } from "./stream-route.ts";
import type { StreamSessionDeps } from "./stream-deps.ts";

export type { StreamSessionDeps } from "./stream-deps.ts";

/** The command a request would have become, for the cases whose decoding can fail. */
const commandTypes: Partial<Record<NonNullable<SessionRequest["request"]["case"]>, SessionCommand["type"]>> = {
  start: "start",
  resume: "resume",
  userMessage: "user_message",
  toolResult: "tool_result",
  registerTools: "register_tools",
};

/** A session call that passed its checks: who calls, and how its responses are written. */
export interface SessionCall {
  principal: Principal;
  /** The call's `authorization`, for the credential re-check. */
  authorization: string | null;
  write: StreamWriter;
  format: EventFormat;
  /** Gives back the call's stream slot (idempotent). */
  release: () => void;
}

/**
 * Opens a streaming session call: its event format (`roz-event-format`), its credentials
 * (`sessions` scope) and a stream slot of its key. A refusal yields the in-band error (in the
 * default format when the format itself is refused) and then throws the status.
 */
export async function* openSessionCall(deps: StreamSessionDeps, ctx: HandlerContext): AsyncGenerator<SessionResponse, SessionCall> {
  const chosen = encoderOf(ctx, deps.defaultEventFormat);
  if ("refused" in chosen) {
    yield* chosen.refused;
    throw toConnectError(chosen.error);
  }
  const authorization = ctx.requestHeader.get("authorization");
  let principal: Principal | undefined;
  try {
    principal = await deps.authenticate(authorization, "sessions");
    const release = deps.streamSlots?.acquire(principal) ?? (() => {});
    return { principal, authorization, write: createStreamWriter(chosen.format, isJsonCall(ctx)), format: chosen.format, release };
  } catch (err) {
    const error = toRozError(err);
    // Refused for the key's cap: its next streams are refused before routing for a while.
    if (principal !== undefined && error.code === "resource_exhausted") deps.atCapRefusals?.remember(authorization, principal);
    // In band (§1, §8): `unauthenticated` for missing or wrong credentials, `permission_denied`
    // for a key without the scope, `resource_exhausted` over the key's cap, a failure of the
    // server itself (store down) as what it is.
    yield* refusalResponses(chosen.encode, error);
    throw toConnectError(error);
  }
}

/** Responses from this size on are handed to connect after the loop's next poll (see `writeStream`). */
const LARGE_RESPONSE_BYTES = 1024 * 1024;

/**
 * Writes a stream's output as the call's responses until it ends; a fatal item ends the
 * call with its status. The client going away (abort, or a write that fails) detaches the
 * stream. Every response goes through the call's `write`, the one per-message write path.
 * A session relayed from its owner node is written after what the local stream queued; a
 * relay that is lost moves the route (see `StreamRoute.relocate`) and writing goes on there.
 */
export async function* writeStream(route: StreamRoute, call: SessionCall, ctx: HandlerContext): AsyncGenerator<SessionResponse> {
  const onAbort = (): void => route.transportBroken();
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  const direct = EnvelopeWriter.of(ctx);
  try {
    for (;;) {
      for await (const item of route.local.output) {
        if (item.kind === "fatal") throw toConnectError(item.error);
        const binary = direct && call.write.binary(item.item);
        if (binary && direct.takes(binary)) {
          const drained = direct.write(binary);
          if (drained) await drained;
          continue;
        }
        if (binary) {
          for (const bytes of binary) {
            // The session encoded these bytes in the turn of the loop that emitted them, and
            // connect copies them again (and compresses them, which is why they are not written
            // directly): for a multi-megabyte response the two would add up in one turn.
            if (bytes.length >= LARGE_RESPONSE_BYTES) await afterPendingIo();
            yield preEncoded(bytes);
          }
          continue;
        }
        // Not `yield*`: over an array it goes through an async-from-sync iterator, two more hops per response.
        for (const response of call.write(item.item)) yield response;
      }
      const remote = route.relayed;
      if (remote === undefined) return;
      try {
        yield* remote.responses(relayedResponse(isJsonCall(ctx)));
        return;
      } catch (err) {
        const error = toRozError(err);
        if (!(await route.relocate(remote, error))) throw toConnectError(error);
      }
    }
  } finally {
    route.end();
    call.release();
    ctx.signal.removeEventListener("abort", onAbort);
    // Reached early only when the client went away while we were writing.
    route.release();
  }
}

/**
 * Requests that start work (a session, a turn, a tool list). Decoding a multi-megabyte one
 * already holds the event loop for a while: its handling waits for the loop's next poll
 * (`afterPendingIo`), so that the two never add up in one turn while other clients wait.
 */
export function startsWork(request: SessionRequest): boolean {
  const kind = request.request.case;
  return kind === "start" || kind === "userMessage" || kind === "toolResult" || kind === "registerTools";
}

/**
 * The StreamSession handler. Requests are read in their own task and fed to the stream's
 * state machine; responses come from its ordered output. A clean half-close detaches the
 * stream (the session ends when it was the last one); a transport break detaches it too,
 * leaving the session resumable.
 */
export function createStreamSession(deps: StreamSessionDeps) {
  return async function* streamSession(requests: AsyncIterable<SessionRequest>, ctx: HandlerContext): AsyncGenerator<SessionResponse> {
    const call = yield* openSessionCall(deps, ctx);
    const { principal } = call;
    const stream = new SessionStream(deps.session, deps.registry, deps.directory, principal);
    const route = new StreamRoute(deps, principal, call.format, ctx.signal, stream);
    const raw = ctx.values.get(rawRequestKey);
    // A client that goes away often half-closes and resets at once (grpc-js cancel, Node's
    // stream.close): at the request EOF the reset may still be on the wire. `settled()` waits
    // for one HTTP/2 PING round trip, which the peer answers only after the frames it sent
    // before it, and then briefly more for a proxy in between (which answers the PING itself
    // and may pass the reset on a little after the END_STREAM).
    const broken = (): boolean => ctx.signal.aborted || (raw?.aborted() ?? false);
    const stillAuthorized = credentialCheck(deps, call.authorization, principal.keyId);

    // The request reader: every path settles the stream itself. A rejection would be a bug,
    // and unobserved it would take the process down.
    void (async () => {
      const state = { attached: false };
      // The stream's trace context: the turns its messages start are traced as the client's children.
      const trace = deps.session.tracing && traceContextOf(ctx.requestHeader);
      const applyLocally: ApplyLocally = (local, request) => applyRequest(local, request, state, deps, principal, trace);
      try {
        for await (const request of requests) {
          const check = stillAuthorized();
          const revoked = check && (await check);
          if (revoked) return await route.fail(revoked);
          const remote = !state.attached ? await relayTarget(deps, principal, request) : undefined;
          if (remote) {
            state.attached = true;
            try {
              // What the local stream queued (pongs) is written first; then the owner's responses.
              route.relayTo(await deps.relay!.open(remote.nodeId, principal, remote.sessionId, remote.afterSeq, call.format));
            } catch (err) {
              return await stream.fail(toRozError(err));
            }
            continue;
          }
          if (startsWork(request)) await afterPendingIo();
          // Most requests are handled without waiting (a ping): only a pending step is awaited.
          const step = route.send(request, applyLocally);
          if ((typeof step === "string" ? step : await step) === "stop") return;
        }
        // Only a stream not yet known to be broken needs the round trip (a reset one costs no PING).
        if (!broken()) await raw?.settled();
        if (broken()) route.transportBroken();
        else await route.requestsEnded();
      } catch (err) {
        if (broken() || route.relayed) route.transportBroken();
        else await route.local.fail(fromConnectError(err));
      }
    })().catch((err: unknown) => {
      deps.session.log.error({ err }, "session request reader failed");
      route.transportBroken();
    });

    yield* writeStream(route, call, ctx);
  };
}

/**
 * Applies one client request to a stream, as every reader of session requests does: decoded
 * into a command and handled, or, undecodable, answered per §1 (a broken `start`/`resume`
 * before the stream is attached is fatal). "stop" when the stream has ended; a request
 * handled at once (a ping) gives its answer without a promise.
 */
export function applyRequest(
  stream: SessionStream,
  request: SessionRequest,
  state: { attached: boolean },
  deps: Pick<StreamSessionDeps, "noteOperation">,
  principal: Principal,
  trace?: TraceContext,
): StepResult {
  let command;
  try {
    command = commandFromWire(request);
  } catch (err) {
    const error = toRozError(err, "malformed_message");
    const type = (request.request.case && commandTypes[request.request.case]) ?? "unsupported";
    if (!state.attached && (type === "start" || type === "resume")) return stream.fail(error).then(() => "stop");
    stream.rejectRequest(error, type);
    return "continue";
  }
  if (command.type === "start" || command.type === "resume") state.attached = true;
  deps.noteOperation?.({ rpc: "StreamSession", request: command.type, tenantId: principal.tenantId, keyId: principal.keyId });
  const handled = stream.handle(withTrace(command, trace));
  return handled === undefined ? "continue" : handled.then(() => "continue");
}

/** The session a first `resume` asks for when another live node owns it (to relay to), else undefined. */
async function relayTarget(
  deps: StreamSessionDeps,
  principal: Principal,
  request: SessionRequest,
): Promise<{ nodeId: string; sessionId: string; afterSeq: number } | undefined> {
  if (!deps.relay || request.request.case !== "resume") return undefined;
  let command;
  try {
    command = commandFromWire(request);
  } catch {
    return undefined;
  }
  if (command.type !== "resume") return undefined;
  const located = await deps.directory.find(principal, command.sessionId).catch(() => undefined);
  return located?.kind === "remote" ? { nodeId: located.nodeId, sessionId: command.sessionId, afterSeq: command.afterSeq ?? 0 } : undefined;
}
