import type { TurnRecord } from "../../src/agent/index.ts";
import type { LoggedEvent, SessionEnvironment, SessionPersistence, SessionStatus, StoredSession } from "../../src/session/index.ts";
import { type SessionStateWrite, type StoredMessages, type StoredTurn, stateWriteParts } from "../../src/store/index.ts";

interface MemorySession {
  tenantId: string;
  environmentId: string;
  status: SessionStatus;
  turns: TurnRecord[];
  events: LoggedEvent[];
  model: string;
  state?: string;
  messages: StoredMessages;
}

/** What a store keeps of a logged event: its seq and flat bytes (no domain event). */
const asStored = (e: LoggedEvent): LoggedEvent => ({ seq: e.seq, bytes: e.bytes });

/** Stores a state write as the stores do: the state row, and each list's rows from `from` on replaced (and cut after them when truncated). */
function saveTo(s: MemorySession, write: SessionStateWrite): void {
  const { state, messages } = stateWriteParts(write);
  s.state = String(state);
  for (const rows of messages) {
    const list = s.messages[rows.list];
    const end = rows.from + rows.messages.length;
    s.messages[rows.list] = [...list.slice(0, rows.from), ...rows.messages.map(String), ...(rows.truncate ? [] : list.slice(end))];
  }
}

/**
 * Session persistence held in memory: the baseline the benchmark compares the real
 * stores against, and what unit tests of the session layer use. Nothing survives a restart.
 */
export class MemoryPersistence implements SessionPersistence {
  readonly environments = new Map<string, SessionEnvironment & { tenantId: string }>();
  readonly sessions = new Map<string, MemorySession>();
  readonly feedback = new Map<string, string>();

  async resolveEnvironment(tenantId: string, environmentId: string): Promise<SessionEnvironment | undefined> {
    if (environmentId === "") return { id: `default-${tenantId}`, permissionRules: [] };
    const env = this.environments.get(environmentId);
    return env?.tenantId === tenantId ? env : undefined;
  }

  async createSession(s: { id: string; tenantId: string; environmentId: string; model: string }): Promise<void> {
    const messages = { history: [], start: [] };
    this.sessions.set(s.id, { tenantId: s.tenantId, environmentId: s.environmentId, status: "active", turns: [], events: [], model: s.model, messages });
  }

  async appendTurn(_tenantId: string, sessionId: string, record: TurnRecord, events: LoggedEvent[], state?: SessionStateWrite): Promise<void> {
    const s = this.sessions.get(sessionId);
    s?.turns.push(record);
    s?.events.push(...events.map(asStored));
    if (s && state !== undefined) saveTo(s, state);
  }

  async appendEvents(_tenantId: string, sessionId: string, events: LoggedEvent[]): Promise<void> {
    this.sessions.get(sessionId)?.events.push(...events.map(asStored));
  }

  async readEvents(tenantId: string, sessionId: string, afterSeq: number, limit: number) {
    const s = this.#own(tenantId, sessionId);
    return s && { prunedThrough: 0, events: s.events.filter((e) => e.seq > afterSeq).slice(0, limit) };
  }

  async findSession(tenantId: string, sessionId: string): Promise<StoredSession | undefined> {
    const s = this.#own(tenantId, sessionId);
    if (!s) return undefined;
    return {
      status: s.status,
      lastSeq: s.events.at(-1)?.seq ?? 0,
      ownerAlive: false,
      environmentId: s.environmentId,
      ...(s.state !== undefined ? { state: s.state } : {}),
    };
  }

  async saveState(tenantId: string, sessionId: string, state: SessionStateWrite): Promise<void> {
    const s = this.#own(tenantId, sessionId);
    if (s) saveTo(s, state);
  }

  async readMessages(tenantId: string, sessionId: string): Promise<StoredMessages | undefined> {
    const s = this.#own(tenantId, sessionId);
    return s && { history: [...s.messages.history], start: [...s.messages.start] };
  }

  async adoptSession(tenantId: string, sessionId: string): Promise<boolean> {
    const s = this.#own(tenantId, sessionId);
    return s !== undefined && (s.status === "active" || s.status === "detached");
  }

  async setStatus(_tenantId: string, sessionId: string, status: SessionStatus): Promise<void> {
    const s = this.sessions.get(sessionId);
    if (s) s.status = status;
  }

  async listTurns(tenantId: string, sessionId: string): Promise<StoredTurn[] | undefined> {
    return this.#own(tenantId, sessionId)?.turns.map((t, i) => ({ ...t, sessionId, seq: i + 1, turn: t.turn ?? i + 1, rolledBack: t.rolledBack ?? false }));
  }

  async rollBackTurns(tenantId: string, sessionId: string, turns: readonly number[], state: SessionStateWrite): Promise<void> {
    const s = this.#own(tenantId, sessionId);
    if (!s) return;
    s.turns = s.turns.map((t, i) => (turns.includes(t.turn ?? i + 1) ? { ...t, rolledBack: true } : t));
    saveTo(s, state);
  }

  async forkSession(
    f: { id: string; tenantId: string; environmentId: string; model: string },
    turns: readonly { record: TurnRecord }[],
    state: SessionStateWrite,
  ): Promise<void> {
    await this.createSession(f);
    this.sessions.get(f.id)!.turns = turns.map((t) => t.record);
    saveTo(this.sessions.get(f.id)!, state);
  }

  async putFeedback(_tenantId: string, sessionId: string, messageId: string, rating: string): Promise<void> {
    this.feedback.set(`${sessionId}/${messageId}`, rating);
  }

  #own(tenantId: string, sessionId: string): MemorySession | undefined {
    const s = this.sessions.get(sessionId);
    return s?.tenantId === tenantId ? s : undefined;
  }
}
