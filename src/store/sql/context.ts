import type { EventRetention } from "../types.ts";
import type { SqlDatabase } from "./database.ts";

/** What every repository of the shared SQL store is built from. */
export interface StoreContext {
  db: SqlDatabase;
  /** Current time in epoch ms (injectable for tests). */
  now: () => number;
  /** Retention with defaults filled in. */
  retention: Required<EventRetention>;
}
