import type { EventRetention, Store } from "../types.ts";
import type { SqlDatabase } from "./database.ts";
import { appendTurnRepo } from "./append-turn.ts";
import type { StoreContext } from "./context.ts";
import { environmentRepo } from "./environments.ts";
import { eventRepo } from "./events.ts";
import { feedbackRepo } from "./feedback.ts";
import { forkRepo } from "./forks.ts";
import { keyRepo } from "./keys.ts";
import { mcpServerRepo } from "./mcp-servers.ts";
import { nodeRepo } from "./nodes.ts";
import { sessionLabelRepo } from "./session-labels.ts";
import { retentionRepo } from "./session-retention.ts";
import { sessionStateRepo } from "./session-state.ts";
import { sessionRepo } from "./sessions.ts";
import { spendRepo } from "./spend.ts";
import { taskRepo } from "./tasks.ts";
import { tenantRepo } from "./tenants.ts";
import { turnRepo } from "./turns.ts";

export const DEFAULT_EVENT_RETENTION: Required<EventRetention> = {
  maxEventsPerSession: 10_000,
  keepAfterEndMs: 24 * 60 * 60 * 1000,
};

export interface SqlStoreOptions {
  eventRetention?: EventRetention;
  /** Clock for every stored time (tests); `Date.now` by default. */
  now?: () => number;
}

/**
 * The one `Store` implementation over any `SqlDatabase` (the schema must be migrated): each
 * area of the interface is a repository in its own file, sharing one database handle.
 */
export function createSqlStore(db: SqlDatabase, options: SqlStoreOptions = {}): Store {
  const ctx: StoreContext = {
    db,
    now: options.now ?? Date.now,
    retention: { ...DEFAULT_EVENT_RETENTION, ...stripUndefined(options.eventRetention ?? {}) },
  };
  return {
    kind: db.dialect.name,
    ...tenantRepo(ctx),
    ...keyRepo(ctx),
    ...environmentRepo(ctx),
    ...sessionRepo(ctx),
    ...sessionLabelRepo(ctx),
    ...retentionRepo(ctx),
    ...sessionStateRepo(ctx),
    ...turnRepo(ctx),
    ...appendTurnRepo(ctx),
    ...forkRepo(ctx),
    ...feedbackRepo(ctx),
    ...eventRepo(ctx),
    ...taskRepo(ctx),
    ...nodeRepo(ctx),
    ...mcpServerRepo(ctx),
    ...spendRepo(ctx),
    async ping() {
      await db.get("SELECT 1 AS ok");
    },
    close: () => db.close(),
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
