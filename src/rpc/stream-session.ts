import type { HandlerContext } from "@connectrpc/connect";
import { type RozError, toRozError } from "../errors/index.ts";
import {
  type SessionCommand,
  type SessionDeps,
  type SessionDirectory,
  SessionRegistry,
  SessionStream,
  sessionErrorOf,
} from "../session/index.ts";
import type { SessionRequest, SessionResponse } from "../gen/roz/v1/agent_pb.js";
import { fromConnectError, toConnectError } from "./connect-errors.ts";
import { rawRequestKey, type RpcAuthenticator } from "./context-values.ts";
import { commandFromWire } from "./from-wire.ts";
import { isJsonCall, responseMessage } from "./response-writer.ts";
import { responseToWire } from "./to-wire.ts";

export interface StreamSessionDeps {
  session: SessionDeps;
  registry: SessionRegistry;
  directory: SessionDirectory;
  authenticate: RpcAuthenticator;
  /** Open streams, so that shutdown can end them. */
  openStreams: Set<SessionStream>;
}

/** The command a request would have become, for the cases whose decoding can fail. */
const commandTypes: Partial<Record<NonNullable<SessionRequest["request"]["case"]>, SessionCommand["type"]>> = {
  start: "start",
  resume: "resume",
  userMessage: "user_message",
  toolResult: "tool_result",
  registerTools: "register_tools",
};

/**
 * The in-band error of a failed authentication (§1): `unauthenticated` for missing, wrong or
 * insufficient credentials; a failure of the server itself (store down) as what it is.
 */
function authError(error: RozError): SessionResponse {
  const wire = error.code === "unauthenticated" || error.code === "permission_denied"
    ? { code: "unauthenticated" as const, message: error.message, retryable: false }
    : sessionErrorOf(error);
  return responseToWire({ seq: 0, event: { type: "session_error", ...wire } });
}

/** Authenticates a session call (`sessions` scope); on failure yields the in-band error, then throws the status. */
export async function* authenticateSessionCall(deps: Pick<StreamSessionDeps, "authenticate">, ctx: HandlerContext) {
  try {
    return await deps.authenticate(ctx.requestHeader.get("authorization"), "sessions");
  } catch (err) {
    const error = toRozError(err);
    yield authError(error);
    throw toConnectError(error);
  }
}

/**
 * Writes a stream's output as the call's responses until it ends; a fatal item ends the
 * call with its status. The client going away (abort, or a write that fails) detaches the
 * stream. Every response goes through `responseMessage`, the one per-message write path.
 */
export async function* writeStream(stream: SessionStream, deps: StreamSessionDeps, ctx: HandlerContext): AsyncGenerator<SessionResponse> {
  deps.openStreams.add(stream);
  const json = isJsonCall(ctx);
  const onAbort = (): void => stream.transportBroken();
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  try {
    for await (const item of stream.output) {
      if (item.kind === "fatal") throw toConnectError(item.error);
      yield responseMessage(item.item, json);
    }
  } finally {
    ctx.signal.removeEventListener("abort", onAbort);
    // Reached early only when the client went away while we were writing.
    stream.transportBroken();
    deps.openStreams.delete(stream);
  }
}

/**
 * The StreamSession handler. Requests are read in their own task and fed to the stream's
 * state machine; responses come from its ordered output. A clean half-close detaches the
 * stream (the session ends when it was the last one); a transport break detaches it too,
 * leaving the session resumable.
 */
export function createStreamSession(deps: StreamSessionDeps) {
  return async function* streamSession(requests: AsyncIterable<SessionRequest>, ctx: HandlerContext): AsyncGenerator<SessionResponse> {
    const principal = yield* authenticateSessionCall(deps, ctx);
    const stream = new SessionStream(deps.session, deps.registry, deps.directory, principal);
    const raw = ctx.values.get(rawRequestKey);
    // A client that goes away often half-closes and resets at once (grpc-js cancel, Node's
    // stream.close): at the request EOF the reset may still be on the wire. `settled()` waits
    // for one HTTP/2 PING round trip, which the peer answers only after the frames it sent
    // before it, so after it a reset is known for sure (no timing guess).
    const broken = (): boolean => ctx.signal.aborted || (raw?.aborted() ?? false);

    // The request reader: every path settles the stream itself. A rejection would be a bug,
    // and unobserved it would take the process down.
    void (async () => {
      let attached = false;
      try {
        for await (const request of requests) {
          let command;
          try {
            command = commandFromWire(request);
          } catch (err) {
            const error = toRozError(err, "malformed_message");
            const type = (request.request.case && commandTypes[request.request.case]) ?? "unsupported";
            if (!attached && (type === "start" || type === "resume")) {
              await stream.fail(error);
              return;
            }
            stream.rejectRequest(error, type);
            continue;
          }
          if (command.type === "start" || command.type === "resume") attached = true;
          await stream.handle(command);
        }
        await raw?.settled();
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

    yield* writeStream(stream, deps, ctx);
  };
}
