import type { HandlerContext } from "@connectrpc/connect";
import { type RozError, toRozError } from "../errors/index.ts";
import { type SequencedEvent, type SessionCommand, type SessionDeps, SessionRegistry, SessionStream, sessionErrorOf } from "../session/index.ts";
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
    let principal;
    try {
      principal = await deps.authenticate(ctx.requestHeader.get("authorization"), "sessions");
    } catch (err) {
      const error = toRozError(err);
      yield* encode(authError(error));
      throw toConnectError(error);
    }
    const stream = new SessionStream(deps.session, deps.registry, principal);
    deps.openStreams.add(stream);
    const raw = ctx.values.get(rawRequestKey);
    const broken = (): boolean => ctx.signal.aborted || (raw?.aborted() ?? false);

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
        if (item.kind === "fatal") throw toConnectError(item.error);
        yield* encode(item.item);
      }
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
      // Reached early only when the client went away while we were writing.
      stream.transportBroken();
      deps.openStreams.delete(stream);
    }
  };
}
