/** The bus subject of a task's team events (and of its end marker). */
export const teamSubject = (taskId: string): string => `roz.team.${taskId}`;

/** Header of every team event message: its task-wide seq. */
export const SEQ_HEADER = "Roz-Seq";
/** Header of the end marker: the seq of the task's last event. */
export const END_HEADER = "Roz-End";
