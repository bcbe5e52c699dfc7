import type { Migration } from "./migration.ts";

/**
 * Each turn's thinking per model call with its signature (JSON: `[{text, signature?,
 * toolUse}]`), so that a conversation rebuilt from the transcript is accepted by providers
 * that verify signed thinking. Turns stored before it have none (`[]`): their thinking is
 * only the text in `assistant_thinking`.
 */
export const thinkingBlocks: Migration = {
  version: 5,
  name: "thinking_blocks",
  statements: () => [`ALTER TABLE turns ADD COLUMN assistant_thinking_blocks TEXT NOT NULL DEFAULT '[]'`],
};
