import type { Migration } from "./migration.ts";

/**
 * An environment's word on the team tools (`teams.enabled`): 1 offers them to its sessions'
 * models, 0 withholds them, NULL leaves it to the server default (`ROZ_TEAMS_DEFAULT`).
 */
export const environmentTeams: Migration = {
  version: 9,
  name: "environment_teams",
  statements: () => [`ALTER TABLE environments ADD COLUMN teams_enabled SMALLINT`],
};
