import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { SequencedTeamEvent, TeamEventBody } from "../teams/index.ts";
import { type TeamEvent, TeamEventSchema } from "../gen/roz/v1/agent_pb.js";

type EventCase = TeamEvent["event"];

function eventOf(e: TeamEventBody): EventCase {
  switch (e.type) {
    case "worker_started":
      return { case: "workerStarted", value: { $typeName: "roz.v1.WorkerStarted", workerId: e.workerId, hostId: e.hostId } };
    case "worker_phase":
      return { case: "workerPhase", value: { $typeName: "roz.v1.WorkerPhase", workerId: e.workerId, phase: e.phase, mode: e.mode } };
    case "worker_tool_call":
      return { case: "workerToolCall", value: { $typeName: "roz.v1.WorkerToolCall", workerId: e.workerId, tool: e.tool } };
    case "worker_completed":
      return { case: "workerCompleted", value: { $typeName: "roz.v1.WorkerCompleted", workerId: e.workerId, result: e.result } };
    case "worker_failed":
      return { case: "workerFailed", value: { $typeName: "roz.v1.WorkerFailed", workerId: e.workerId, reason: e.reason } };
    case "worker_exited":
      return { case: "workerExited", value: { $typeName: "roz.v1.WorkerExited", workerId: e.workerId, parentTaskId: e.parentTaskId } };
    case "worker_approval_requested":
      return {
        case: "workerApprovalRequested",
        value: {
          $typeName: "roz.v1.WorkerApprovalRequested",
          workerId: e.workerId,
          taskId: e.taskId,
          approvalId: e.approvalId,
          toolName: e.toolName,
          reason: e.reason,
          timeoutSecs: BigInt(e.timeoutSecs),
        },
      };
    case "worker_approval_resolved":
      return {
        case: "workerApprovalResolved",
        value: { $typeName: "roz.v1.WorkerApprovalResolved", workerId: e.workerId, taskId: e.taskId, approvalId: e.approvalId, approved: e.approved },
      };
    default: {
      const unreachable: never = e;
      throw new Error(`unmapped team event ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Maps one numbered team event to its `TeamEvent`. */
export function teamEventToWire({ seq, time, event }: SequencedTeamEvent): TeamEvent {
  return create(TeamEventSchema, { seq: BigInt(seq), time: timestampFromMs(time), event: eventOf(event) });
}

/** The bytes stored and published for a team event: what every watcher receives. */
export const encodeTeamEvent = (event: SequencedTeamEvent): Uint8Array => toBinary(TeamEventSchema, teamEventToWire(event));
