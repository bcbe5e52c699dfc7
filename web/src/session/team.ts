import type { TeamEvent } from "@roz/client";

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

/** Applies one team event (events at or below `lastSeq` are replays and ignored). */
export function applyTeamEvent(team: TeamState, ev: TeamEvent): TeamState {
  const seq = ev.seq;
  if (seq !== 0 && seq <= team.lastSeq) return team;
  const at = ev.time?.getTime() ?? Date.now();
  const id = ev.workerId;
  const existing = team.workers.find((w) => w.id === id);
  const base: Worker = existing ?? { id, startedAt: at, phase: 0, mode: "", tool: "", tools: 0, state: "running", result: "", exited: false, marks: [] };
  let next: Worker = base;
  switch (ev.type) {
    case "worker_started":
      next = { ...base, startedAt: at };
      break;
    case "worker_phase":
      next = { ...base, phase: ev.phase, mode: ev.mode, marks: [...base.marks, { at, label: `phase ${ev.phase}` }] };
      break;
    case "worker_tool_call":
      next = { ...base, tool: ev.tool, tools: base.tools + 1, marks: [...base.marks, { at, label: ev.tool }] };
      break;
    case "worker_completed":
      next = { ...base, state: "completed", result: ev.result, endedAt: at };
      break;
    case "worker_failed":
      next = { ...base, state: "failed", result: ev.reason, endedAt: at };
      break;
    case "worker_exited":
      next = { ...base, exited: true, endedAt: base.endedAt ?? at };
      break;
    case "worker_approval_requested":
      next = { ...base, state: "waiting_approval", tool: ev.toolName };
      break;
    case "worker_approval_resolved":
      next = { ...base, state: base.state === "waiting_approval" ? "running" : base.state };
      break;
  }
  const workers = existing ? team.workers.map((w) => (w.id === id ? next : w)) : [...team.workers, next];
  return { lastSeq: seq || team.lastSeq, workers };
}
