import type { Migration } from "./migration.ts";

/**
 * The user messages steered into each turn while it ran (JSON: `[{messageId, content,
 * context, afterToolCalls}]`), so the transcript shows them inside the turn they joined and a
 * conversation rebuilt from it carries them. Turns stored before it have none (`[]`).
 */
export const steeredInputs: Migration = {
  version: 7,
  name: "steered_inputs",
  statements: () => [`ALTER TABLE turns ADD COLUMN steered TEXT NOT NULL DEFAULT '[]'`],
};
