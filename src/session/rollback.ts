import type { Agent } from "../agent/index.ts";
import { RozError } from "../errors/index.ts";
import type { SessionDeps } from "./ports.ts";
import type { SessionOrigin } from "./snapshot.ts";
import type { StoreWriter } from "./store-writer.ts";
import { conversationOf } from "./transcript.ts";
import type { TurnRunner } from "./turn-runner.ts";
import type { SessionEvent } from "./types.ts";

export interface RollbackInit {
  tenantId: string;
  sessionId: string;
  agent: Agent;
  turns: TurnRunner;
  writer: StoreWriter;
  origin: SessionOrigin;
  deps: Pick<SessionDeps, "persistence">;
}

/**
 * A session's rollbacks, one after another (each counts the turns the one before left): each
 * records a turn cut by a crash first (a turn of its own, as for any request), rolls back
 * (see `rollBack`) and tells every attached stream with `rolled_back`.
 */
export class Rollbacks {
  readonly #init: RollbackInit & { ending: () => boolean; emit: (event: SessionEvent) => void };
  #chain: Promise<unknown> = Promise.resolve();

  constructor(init: RollbackInit & { ending: () => boolean; emit: (event: SessionEvent) => void }) {
    this.#init = init;
  }

  /** Rolls back the last `n` turns; rejects with the refusal (`session_ended` once the session is ending). */
  run(n: number): Promise<RollbackResult> {
    const init = this.#init;
    const run = this.#chain.then(async () => {
      if (init.ending()) throw new RozError("session_ended", `session "${init.sessionId}" has ended`);
      await init.turns.recordCutTurn();
      const result = await rollBack(init, n);
      init.emit({ type: "rolled_back", turns: result.turns, remainingTurns: result.remainingTurns });
      return result;
    });
    this.#chain = run.catch(() => undefined);
    return run;
  }
}

/** What a rollback did: the turns it removed and the completed turns the model still sees. */
export interface RollbackResult {
  turns: number;
  remainingTurns: number;
}

/**
 * Removes the last `n` completed turns that are not rolled back yet from what the model sees
 * next (§11): the conversation becomes the session's start history plus the remaining stored
 * turns, rebuilt from the transcript (so compaction of the removed part is undone too), and
 * the removed turns are marked in the transcript with the new state, in one store write.
 * Refused with `turn_in_progress` while a turn runs (or one started meanwhile) and
 * `invalid_argument` for 0 or more than the remaining turns; on a store failure nothing changes.
 */
export async function rollBack(init: RollbackInit, n: number): Promise<RollbackResult> {
  const { tenantId, sessionId, agent, turns } = init;
  if (!Number.isInteger(n) || n < 1) throw new RozError("invalid_argument", "rollback.turns must be at least 1");
  const busy = () => new RozError("turn_in_progress", "a turn is running; roll back after its turn_complete");
  if (turns.running) throw busy();
  const lastTurn = turns.lastTurn;
  const stored = (await init.deps.persistence.listTurns(tenantId, sessionId)) ?? [];
  if (turns.running || turns.lastTurn !== lastTurn) throw busy();
  const visible = stored.filter((t) => !t.rolledBack);
  if (n > visible.length) throw new RozError("invalid_argument", `rollback.turns is ${n}, but only ${visible.length} turns can be rolled back`);
  const remaining = visible.slice(0, visible.length - n);
  const before = agent.history();
  agent.replaceHistory([...(init.origin.startHistory ?? []), ...conversationOf(remaining)]);
  try {
    await init.writer.storeRollback(visible.slice(remaining.length).map((t) => t.turn));
  } catch (err) {
    agent.replaceHistory(before);
    throw new RozError("internal", "could not store the rollback", { cause: err });
  }
  return { turns: n, remainingTurns: remaining.length };
}
