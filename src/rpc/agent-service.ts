import type { ServiceImpl } from "@connectrpc/connect";
import type { AgentService } from "../gen/roz/v1/agent_pb.js";
import { createAttachSession } from "./attach-session.ts";
import { createSendToSession } from "./send-to-session.ts";
import { createStreamSession, type StreamSessionDeps } from "./stream-session.ts";
import { createWatchTeam } from "./watch-team.ts";

/** Builds the `roz.v1.AgentService` implementation; handlers only translate. */
export function createAgentService(deps: StreamSessionDeps): ServiceImpl<typeof AgentService> {
  return {
    streamSession: createStreamSession(deps),
    watchTeam: createWatchTeam(deps),
    attachSession: createAttachSession(deps),
    sendToSession: createSendToSession(deps),
  };
}
