import { fromBinary } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { RozError, toRozError } from "../errors/index.ts";
import { isUuid } from "../session/index.ts";
import type { Teams } from "../teams/index.ts";
import { type TeamEvent, TeamEventSchema, type WatchTeamRequest } from "../gen/roz/v1/agent_pb.js";
import { toConnectError } from "./connect-errors.ts";
import type { RpcAuthenticator } from "./context-values.ts";

/**
 * WatchTeam (session-behaviour.md §7): the task's events after `after_seq` from the store,
 * then live, ending OK once the task has finished and every worker has exited. Unknown or
 * another tenant's task → NOT_FOUND; malformed id → INVALID_ARGUMENT.
 */
export function createWatchTeam(deps: { authenticate: RpcAuthenticator; teams: Pick<Teams, "watch">; openWatches: Set<AbortController> }) {
  return async function* watchTeam(request: WatchTeamRequest, ctx: HandlerContext): AsyncGenerator<TeamEvent> {
    let events: AsyncIterable<Uint8Array>;
    // Aborted when the call ends, or by shutdown (then the watcher gets a retryable UNAVAILABLE).
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    ctx.signal.addEventListener("abort", onAbort, { once: true });
    deps.openWatches.add(stop);
    const release = (): void => {
      ctx.signal.removeEventListener("abort", onAbort);
      deps.openWatches.delete(stop);
    };
    try {
      const principal = await deps.authenticate(ctx.requestHeader.get("authorization"), "tasks");
      if (!isUuid(request.taskId)) throw new RozError("invalid_argument", `task_id "${request.taskId}" is not a UUID`);
      const afterSeq = request.afterSeq ?? 0n;
      if (afterSeq > BigInt(Number.MAX_SAFE_INTEGER)) throw new RozError("invalid_argument", "after_seq is too large");
      events = await deps.teams.watch(principal.tenantId, request.taskId, Number(afterSeq), stop.signal);
    } catch (err) {
      release();
      throw toConnectError(toRozError(err));
    }
    try {
      for await (const bytes of events) yield fromBinary(TeamEventSchema, bytes);
      if (stop.signal.aborted && !ctx.signal.aborted) throw new RozError("shutting_down", "the server is shutting down; watch again with after_seq");
    } catch (err) {
      throw toConnectError(toRozError(err));
    } finally {
      release();
    }
  };
}
