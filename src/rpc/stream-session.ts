import type { HandlerContext } from "@connectrpc/connect";
import { RozError } from "../errors/index.ts";
import { type SessionDeps, SessionRegistry, SessionStream } from "../session/index.ts";
import type { SessionRequest, SessionResponse } from "../gen/roz/v1/agent_pb.js";
import { fromConnectError, toConnectError } from "./connect-errors.ts";
import { rawRequestKey, type RpcAuthenticator } from "./context-values.ts";
import { commandFromWire } from "./from-wire.ts";
import { responseToWire } from "./to-wire.ts";

export interface StreamSessionDeps {
  session: SessionDeps;
  registry: SessionRegistry;
  authenticate: RpcAuthenticator;
  /** Open streams, so that shutdown can end them. */
  openStreams: Set<SessionStream>;
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
    let principal;
    try {
      principal = await deps.authenticate(ctx.requestHeader.get("authorization"), "sessions");
    } catch (err) {
      const error = err instanceof RozError ? err : new RozError("internal", undefined, { cause: err });
      yield responseToWire({ seq: 0, event: { type: "session_error", code: "unauthenticated", message: error.message, retryable: false } });
      throw toConnectError(error);
    }
    const stream = new SessionStream(deps.session, deps.registry, principal);
    deps.openStreams.add(stream);
    const raw = ctx.values.get(rawRequestKey);
    const broken = (): boolean => ctx.signal.aborted || (raw?.aborted() ?? false);

    const reader = (async () => {
      let started = false;
      try {
        for await (const request of requests) {
          let command;
          try {
            command = commandFromWire(request);
          } catch (err) {
            const error = err instanceof RozError ? err : new RozError("malformed_message", undefined, { cause: err });
            if (!started && request.request.case === "start") {
              await stream.fail(error);
              return;
            }
            stream.rejectRequest(error);
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
    })();

    const onAbort = (): void => stream.transportBroken();
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    try {
      for await (const item of stream.output) {
        if (item.kind === "fatal") throw toConnectError(item.error);
        yield responseToWire(item.item);
      }
    } finally {
      ctx.signal.removeEventListener("abort", onAbort);
      // Reached early only when the client went away while we were writing.
      stream.transportBroken();
      deps.openStreams.delete(stream);
      void reader;
    }
  };
}
