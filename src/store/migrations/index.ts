import { initial } from "./001-initial.ts";
import { durableSessions } from "./002-durable-sessions.ts";
import { teams } from "./003-teams.ts";
import { thinkingBlocks } from "./005-thinking-blocks.ts";
import { turnNumbers } from "./006-turn-numbers.ts";
import { steeredInputs } from "./007-steered-inputs.ts";
import { orphanedSessions } from "./008-orphaned-sessions.ts";
import { environmentTeams } from "./009-environment-teams.ts";
import { findingSessions } from "./010-finding-sessions.ts";
import { mcpServers } from "./011-mcp-servers.ts";
import { mcpOauth } from "./012-mcp-oauth.ts";
import { spend } from "./013-spend.ts";
import { sessionMessages } from "./014-session-messages.ts";
import type { Migration } from "./migration.ts";

export type { Migration } from "./migration.ts";
export { runMigrations } from "./runner.ts";

/** Every schema version, ascending. Append only. */
export const migrations: readonly Migration[] = [
  initial,
  durableSessions,
  teams,
  thinkingBlocks,
  turnNumbers,
  steeredInputs,
  orphanedSessions,
  environmentTeams,
  findingSessions,
  mcpServers,
  mcpOauth,
  spend,
  sessionMessages,
];
