/**
 * The teams layer's domain: team events and what a worker ends with, free of protobuf.
 * `src/rpc` maps `TeamEventBody` to `roz.v1.TeamEvent`.
 */
import type { AgentMode } from "../agent/index.ts";

/** Why a worker failed (session-behaviour.md §7). */
export type WorkerFailure = "timeout" | "model_error" | "cancelled" | "e_stop" | "safety_violation";

/** One lifecycle step of a worker. */
export type TeamEventBody =
  | { type: "worker_started"; workerId: string; hostId: string }
  | { type: "worker_phase"; workerId: string; phase: number; mode: AgentMode }
  | { type: "worker_tool_call"; workerId: string; tool: string }
  | { type: "worker_completed"; workerId: string; result: string }
  | { type: "worker_failed"; workerId: string; reason: WorkerFailure }
  | { type: "worker_exited"; workerId: string; parentTaskId: string }
  | {
      type: "worker_approval_requested";
      workerId: string;
      taskId: string;
      approvalId: string;
      toolName: string;
      reason: string;
      timeoutSecs: number;
    }
  | { type: "worker_approval_resolved"; workerId: string; taskId: string; approvalId: string; approved: boolean };

/** A team event with its task-wide number (1-based, gap-free) and time (epoch ms). */
export interface SequencedTeamEvent {
  seq: number;
  time: number;
  event: TeamEventBody;
}

/** How a worker ended, as `wait_for_workers` and REST report it. */
export type WorkerEnding = { status: "completed"; result: string } | { status: "failed"; reason: WorkerFailure };

/** Which client tools a spawned worker gets from its parent session. */
export type WorkerToolChoice = "all" | "none" | string[];

/** What a worker is started with. */
export interface WorkerRequest {
  prompt: string;
  mode?: AgentMode;
  model?: string;
  tools?: WorkerToolChoice;
}
