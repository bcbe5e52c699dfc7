import { Code, ConnectError, type ServiceImpl } from "@connectrpc/connect";
import type { AgentService } from "../gen/roz/v1/agent_pb.js";
import { createStreamSession, type StreamSessionDeps } from "./stream-session.ts";
import { createWatchTeam } from "./watch-team.ts";

/** Builds the `roz.v1.AgentService` implementation; handlers only translate. */
export function createAgentService(deps: StreamSessionDeps): ServiceImpl<typeof AgentService> {
  return {
    streamSession: createStreamSession(deps),
    watchTeam: createWatchTeam(deps),
    // biome-ignore lint/correctness/useYield: not served yet
    async *attachSession() {
      throw new ConnectError("AttachSession is not implemented yet", Code.Unimplemented);
    },
    async sendToSession() {
      throw new ConnectError("SendToSession is not implemented yet", Code.Unimplemented);
    },
  };
}
