import type { Migration } from "./migration.ts";

/**
 * Sessions nobody runs: a node started with the default id records its host and process id
 * (`host`, `pid`; NULL for a set `ROZ_NODE_ID`), so that a node on the same host whose process
 * is gone counts as dead at once; and an ended session may say why it ended (`end_reason`,
 * e.g. `abandoned`; NULL means what its status says).
 */
export const orphanedSessions: Migration = {
  version: 8,
  name: "orphaned_sessions",
  statements: () => [`ALTER TABLE nodes ADD COLUMN host TEXT`, `ALTER TABLE nodes ADD COLUMN pid INTEGER`, `ALTER TABLE sessions ADD COLUMN end_reason TEXT`],
};
