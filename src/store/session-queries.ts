/** How sessions are looked for (`listSessions`) and relabelled (`updateSession`). */
import type { PageRequest, SessionStatus } from "./records.ts";

/** Which sessions `listSessions` returns; absent fields do not filter. */
export interface SessionFilter extends PageRequest {
  status?: SessionStatus;
  environmentId?: string;
  /** Only archived (true) or only not archived (false) sessions; both when absent. */
  archived?: boolean;
  /** Sessions whose metadata holds every one of these pairs. */
  metadata?: Record<string, string>;
  /** Created strictly after / before these times (epoch ms). */
  createdAfter?: number;
  createdBefore?: number;
  /**
   * Words that must all occur in the session's title or in one turn's user or assistant text
   * (full-text index, case-insensitive, whole words).
   */
  words?: readonly string[];
}

/** What `updateSession` changes; absent fields stay, `title: null` clears the title. */
export interface SessionPatch {
  title?: string | null;
  /** Keys given are set, keys given as `null` removed. */
  metadata?: Record<string, string | null>;
  archived?: boolean;
}
