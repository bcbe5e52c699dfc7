/** Multi-agent tasks: workers as agent loops, limits, the team event log and watching it. */
export type * from "./types.ts";
export type * from "./ports.ts";
export { Teams, type NewTaskRequest, type SessionTeam, type TaskView } from "./teams.ts";
export { SPAWN_WORKER, WAIT_FOR_WORKERS } from "./team-tools.ts";
