import type { TeamEvent } from "../../../src/gen/roz/v1/agent_pb.js";

/** What the console draws of one worker, folded from its team events. */
export interface Worker {
  id: string;
  startedAt: number;
  phase: number;
  mode: string;
  tool: string;
  tools: number;
  state: "running" | "waiting_approval" | "completed" | "failed";
  result: string;
  exited: boolean;
  /** Event times (ms) of phase changes and tool calls, for the timeline. */
  marks: { at: number; label: string }[];
  endedAt?: number;
}

export interface TeamState {
  lastSeq: number;
  workers: Worker[];
}

export const emptyTeam = (): TeamState => ({ lastSeq: 0, workers: [] });

const timeOf = (e: TeamEvent): number => (e.time ? Number(e.time.seconds) * 1000 + Math.floor(e.time.nanos / 1e6) : Date.now());

/** Applies one team event (events at or below `lastSeq` are replays and ignored). */
export function applyTeamEvent(team: TeamState, e: TeamEvent): TeamState {
  const seq = Number(e.seq);
  if (seq !== 0 && seq <= team.lastSeq) return team;
  const at = timeOf(e);
  const ev = e.event;
  if (ev.case === undefined) return { ...team, lastSeq: seq };
  const id = ev.value.workerId;
  const existing = team.workers.find((w) => w.id === id);
  const base: Worker = existing ?? { id, startedAt: at, phase: 0, mode: "", tool: "", tools: 0, state: "running", result: "", exited: false, marks: [] };
  let next: Worker = base;
  switch (ev.case) {
    case "workerStarted":
      next = { ...base, startedAt: at };
      break;
    case "workerPhase":
      next = { ...base, phase: ev.value.phase, mode: ev.value.mode, marks: [...base.marks, { at, label: `phase ${ev.value.phase}` }] };
      break;
    case "workerToolCall":
      next = { ...base, tool: ev.value.tool, tools: base.tools + 1, marks: [...base.marks, { at, label: ev.value.tool }] };
      break;
    case "workerCompleted":
      next = { ...base, state: "completed", result: ev.value.result, endedAt: at };
      break;
    case "workerFailed":
      next = { ...base, state: "failed", result: ev.value.reason, endedAt: at };
      break;
    case "workerExited":
      next = { ...base, exited: true, endedAt: base.endedAt ?? at };
      break;
    case "workerApprovalRequested":
      next = { ...base, state: "waiting_approval", tool: ev.value.toolName };
      break;
    case "workerApprovalResolved":
      next = { ...base, state: base.state === "waiting_approval" ? "running" : base.state };
      break;
  }
  const workers = existing ? team.workers.map((w) => (w.id === id ? next : w)) : [...team.workers, next];
  return { lastSeq: seq || team.lastSeq, workers };
}
