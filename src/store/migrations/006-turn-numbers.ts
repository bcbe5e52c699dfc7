import type { Migration } from "./migration.ts";

/**
 * Each turn's number as the session counted it (every started turn counts, and a fork's turns
 * go on from the copied ones, so it can differ from `seq`), whether it is left out of what the
 * model sees (rolled back, or refused by the model), and for a turn copied into a fork the
 * session and turn it came from. Turns stored before it have no number: their `seq` is it.
 */
export const turnNumbers: Migration = {
  version: 6,
  name: "turn_numbers",
  statements: () => [
    `ALTER TABLE turns ADD COLUMN turn INTEGER`,
    `ALTER TABLE turns ADD COLUMN rolled_back SMALLINT NOT NULL DEFAULT 0`,
    `ALTER TABLE turns ADD COLUMN forked_from_session TEXT`,
    `ALTER TABLE turns ADD COLUMN forked_from_turn INTEGER`,
  ],
};
