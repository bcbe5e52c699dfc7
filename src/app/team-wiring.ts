import type { FastifyBaseLogger } from "fastify";
import type { EventBus } from "../bus/index.ts";
import type { ModelCatalog } from "../models/index.ts";
import { encodeTeamEvent } from "../rpc/index.ts";
import type { SessionExtension, SessionLink } from "../session/index.ts";
import type { Store } from "../store/index.ts";
import { type ParentSession, Teams } from "../teams/index.ts";
import type { AgentSettings } from "./agent-setup.ts";
import type { Config } from "./config.ts";
import type { Lifecycle } from "./lifecycle.ts";
import type { Mcp } from "./mcp-setup.ts";
import type { NodeHeartbeat } from "./node-heartbeat.ts";
import { agentFactory } from "./tracing-setup.ts";
import type { Telemetry } from "../telemetry/index.ts";
import type { SpendMeter } from "./spend-meter.ts";

/** The teams layer's view of a live session, over the session layer's link. */
export function parentSessionOf(link: SessionLink): ParentSession {
  return {
    sessionId: link.id,
    tenantId: link.tenantId,
    model: link.model,
    environmentId: link.environmentId,
    permissions: () => link.permissions(),
    clientTools: () => link.clientTools(),
    requestTool: (call) => link.emit({ type: "worker_tool_request", ...call }),
    toolFinished: (finished) => link.emit({ type: "tool_finished", ...finished }),
    askApproval: (approval) => link.emit({ type: "activity", state: "waiting_approval", detail: approval.toolCallId, approval }),
    route: (toolCallId, route) => link.route(toolCallId, route),
    teamStarted: (taskId) => link.emit({ type: "team_started", taskId }),
  };
}

/**
 * `SessionDeps.extend`: every started session ends its task with it, and its model gets the
 * team tools only when the session has them on (§7: opt-in per environment or server default).
 */
export function teamExtension(teams: Teams): (link: SessionLink) => SessionExtension {
  return (link) => {
    const extension = teams.attachSession(parentSessionOf(link));
    return link.teams ? extension : { ...extension, serverTools: [] };
  };
}

export interface TeamsSetup {
  config: Config;
  store: Store;
  bus: EventBus;
  models: ModelCatalog;
  agent: AgentSettings;
  nodeId: string;
  heartbeat: NodeHeartbeat;
  mcp: Mcp;
  spend: SpendMeter;
  log: FastifyBaseLogger;
  lifecycle: Lifecycle;
  /** Tracing, when an OTLP endpoint is configured: workers' runs and tool calls become spans. */
  telemetry: Telemetry | undefined;
}

/**
 * Builds the teams of this node and ends the tasks a previous run left running (their workers
 * fail with timeout); from then on each heartbeat also ends the tasks of nodes that stopped
 * heart-beating. At shutdown every running task is cancelled.
 */
export async function startTeams({ config, store, bus, models, agent, nodeId, heartbeat, mcp, spend, log, lifecycle, telemetry }: TeamsSetup): Promise<Teams> {
  const teams = new Teams({
    store,
    bus,
    encode: encodeTeamEvent,
    models,
    createAgent: agentFactory(telemetry),
    ...(telemetry ? { tracing: telemetry.tracing } : {}),
    agentLimits: agent.limits,
    defaultPermissions: agent.defaultPermissions,
    defaultMaxContextTokens: config.maxContextTokens,
    limits: {
      workersPerTask: config.teamMaxWorkersPerTask,
      runningWorkersPerTenant: config.teamMaxRunningWorkersPerTenant,
      maxSpawnDepth: config.teamMaxSpawnDepth,
      workerTimeoutMs: config.workerTimeoutMs,
    },
    nodeId,
    nodeExpiryMs: config.nodeExpiryMs,
    log,
    liveTools: (tenantId, sessionId) => mcp.workerTools(tenantId, sessionId),
    spend: (owner) => spend.gate(owner),
  });
  lifecycle.onClose("teams", () => teams.close());
  const recovered = await teams.recover(true);
  if (recovered > 0) log.warn({ tasks: recovered }, "ended tasks of a previous run: their workers failed with timeout");
  heartbeat.afterEachBeat(async () => {
    const closed = await teams.recover();
    if (closed > 0) log.warn({ tasks: closed }, "ended tasks of a node that stopped heart-beating: their workers failed with timeout");
  });
  return teams;
}
