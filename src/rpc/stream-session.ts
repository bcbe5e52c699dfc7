import type { HandlerContext } from "@connectrpc/connect";
import { RozError, toRozError } from "../errors/index.ts";
import {
  type Principal,
  type SequencedEvent,
  type SessionCommand,
  type SessionDeps,
  SessionRegistry,
  SessionStream,
  sessionErrorOf,
  type StreamSlots,
} from "../session/index.ts";
import type { Teams } from "../teams/index.ts";
import type { SessionRequest, SessionResponse } from "../gen/roz/v1/agent_pb.js";
import { fromConnectError, toConnectError } from "./connect-errors.ts";
import { rawRequestKey, type RpcAuthenticator } from "./context-values.ts";
import type { EventFormat } from "./event-format.ts";
import { commandFromWire } from "./from-wire.ts";
import { encoderOf } from "./responses.ts";

export interface StreamSessionDeps {
  session: SessionDeps;
  registry: SessionRegistry;
  authenticate: RpcAuthenticator;
  /** Open streams, so that shutdown can end them. */
  openStreams: Set<SessionStream>;
  /** The event format of streams whose metadata chooses none (`ROZ_EVENT_FORMAT`). */
  defaultEventFormat: EventFormat;
  /** Tasks, for WatchTeam. */
  teams: Pick<Teams, "watch">;
  /** Open WatchTeam calls, so that shutdown can end them. */
  openWatches: Set<AbortController>;
  /** Caps the streams open at once per key (none when absent). */
  streamSlots?: StreamSlots;
  /**
   * How often, at most, an open stream re-checks its credentials (on its next request), so
   * that revoking or expiring a key reaches its open sessions; 0 checks every request. Absent:
   * never re-checked.
   */
  credentialRecheckMs?: number;
  /** Told about each request before it is handled (the event-loop watchdog names what ran). */
  noteOperation?: (operation: Record<string, unknown>) => void;
}

/** The command a request would have become, for the cases whose decoding can fail. */
const commandTypes: Partial<Record<NonNullable<SessionRequest["request"]["case"]>, SessionCommand["type"]>> = {
  start: "start",
  userMessage: "user_message",
  toolResult: "tool_result",
  registerTools: "register_tools",
};

/**
 * The in-band error of a failed authentication (§1, §8): `unauthenticated` for missing or wrong
 * credentials, `permission_denied` for a key without the scope, a failure of the server
 * itself (store down) as what it is.
 */
function authError(error: RozError): SequencedEvent {
  return { seq: 0, event: { type: "session_error", ...sessionErrorOf(error) } };
}

/**
 * The re-check of a stream's credentials before each request (at most every
 * `credentialRecheckMs`): resolves with the `unauthenticated` error once the key was revoked,
 * expired or lost its scope, else undefined. A failure of the store itself does not end the
 * stream (the request will meet the same store anyway).
 */
function credentialCheck(deps: StreamSessionDeps, authorization: string | null): () => Promise<RozError | undefined> {
  const every = deps.credentialRecheckMs;
  let checkedAt = Date.now();
  return async () => {
    if (every === undefined || Date.now() - checkedAt < every) return undefined;
    try {
      await deps.authenticate(authorization, "sessions");
      checkedAt = Date.now();
      return undefined;
    } catch (err) {
      const error = toRozError(err);
      if (error.code !== "unauthenticated" && error.code !== "permission_denied") return undefined;
      return new RozError("unauthenticated", `${error.message}: this stream's credentials are no longer valid`);
    }
  };
}

/** Lets the transport report a reset that happened together with the request EOF. */
const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

/**
 * The StreamSession handler. Requests are read in their own task and fed to the
 * session's state machine; responses come from its ordered output. A clean half-close
 * ends the session after its running turn; a transport break detaches it.
 */
export function createStreamSession(deps: StreamSessionDeps) {
  return async function* streamSession(requests: AsyncIterable<SessionRequest>, ctx: HandlerContext): AsyncGenerator<SessionResponse> {
    const format = encoderOf(ctx, deps.defaultEventFormat);
    if ("refused" in format) {
      yield* format.refused;
      throw toConnectError(format.error);
    }
    const { encode } = format;
    const authorization = ctx.requestHeader.get("authorization");
    let principal: Principal;
    let releaseSlot: () => void;
    try {
      principal = await deps.authenticate(authorization, "sessions");
      releaseSlot = deps.streamSlots?.acquire(principal) ?? (() => {});
    } catch (err) {
      const error = toRozError(err);
      // A refused client may still be sending (a large first message): stop it after the trailers.
      ctx.values.get(rawRequestKey)?.resetAfterTrailers();
      yield* encode(authError(error));
      throw toConnectError(error);
    }
    const stream = new SessionStream(deps.session, deps.registry, principal);
    deps.openStreams.add(stream);
    const raw = ctx.values.get(rawRequestKey);
    const broken = (): boolean => ctx.signal.aborted || (raw?.aborted() ?? false);
    const stillAuthorized = credentialCheck(deps, authorization);

    // The request reader: every path settles the stream itself. A rejection would be a bug,
    // and unobserved it would take the process down.
    void (async () => {
      let started = false;
      try {
        for await (const request of requests) {
          let command;
          try {
            command = commandFromWire(request);
          } catch (err) {
            const error = toRozError(err, "malformed_message");
            const type = (request.request.case && commandTypes[request.request.case]) ?? "unsupported";
            if (!started && type === "start") {
              await stream.fail(error);
              return;
            }
            stream.rejectRequest(error, type);
            continue;
          }
          if (command.type === "start") started = true;
          const revoked = await stillAuthorized();
          if (revoked) {
            await stream.fail(revoked);
            return;
          }
          deps.noteOperation?.({ rpc: "StreamSession", request: command.type, tenantId: principal.tenantId, keyId: principal.keyId });
          await stream.handle(command);
        }
        await settle();
        if (broken()) stream.transportBroken();
        else await stream.requestsEnded();
      } catch (err) {
        if (broken()) stream.transportBroken();
        else await stream.fail(fromConnectError(err));
      }
    })().catch((err: unknown) => {
      deps.session.log.error({ err }, "session request reader failed");
      stream.transportBroken();
    });

    const onAbort = (): void => stream.transportBroken();
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const item of stream.output) {
        if (item.kind === "fatal") {
          // The client may still be sending (an oversized message): its body must not sit in flow control.
          raw?.resetAfterTrailers();
          throw toConnectError(item.error);
        }
        yield* encode(item.item);
      }
    } finally {
      releaseSlot();
      ctx.signal.removeEventListener("abort", onAbort);
      // Reached early only when the client went away while we were writing.
      stream.transportBroken();
      deps.openStreams.delete(stream);
    }
  };
}
