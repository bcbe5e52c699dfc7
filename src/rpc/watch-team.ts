import type { HandlerContext } from "@connectrpc/connect";
import { RozError, toRozError } from "../errors/index.ts";
import { isUuid } from "../session/index.ts";
import type { TeamEvent, WatchTeamRequest } from "../gen/roz/v1/agent_pb.js";
import { toConnectError } from "./connect-errors.ts";
import type { RpcAuthenticator } from "./context-values.ts";

/**
 * WatchTeam (session-behaviour.md §7). Tasks do not exist yet on this server, so every
 * well-formed id is NOT_FOUND, exactly as an unknown or another tenant's task will be.
 */
export function createWatchTeam(deps: { authenticate: RpcAuthenticator }) {
  return async function* watchTeam(request: WatchTeamRequest, ctx: HandlerContext): AsyncGenerator<TeamEvent> {
    try {
      await deps.authenticate(ctx.requestHeader.get("authorization"), "tasks");
      if (!isUuid(request.taskId)) throw new RozError("invalid_argument", `task_id "${request.taskId}" is not a UUID`);
      throw new RozError("not_found", `task "${request.taskId}" not found`);
    } catch (err) {
      throw toConnectError(toRozError(err));
    }
    yield* [];
  };
}
