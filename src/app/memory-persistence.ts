import type { TurnRecord } from "../agent/index.ts";
import type { SequencedEvent, SessionEnvironment, SessionPersistence, SessionStatus } from "../session/index.ts";

/**
 * Session persistence held in memory: the baseline the benchmark compares the real
 * stores against, and what unit tests of the session layer use. Nothing survives a restart.
 */
export class MemoryPersistence implements SessionPersistence {
  readonly environments = new Map<string, SessionEnvironment & { tenantId: string }>();
  readonly sessions = new Map<string, { tenantId: string; status: SessionStatus; turns: TurnRecord[]; events: SequencedEvent[]; model: string }>();
  readonly feedback = new Map<string, string>();

  async resolveEnvironment(tenantId: string, environmentId: string): Promise<SessionEnvironment | undefined> {
    if (environmentId === "") return { id: `default-${tenantId}`, permissionRules: [] };
    const env = this.environments.get(environmentId);
    return env?.tenantId === tenantId ? env : undefined;
  }

  async createSession(s: { id: string; tenantId: string; environmentId: string; model: string }): Promise<void> {
    this.sessions.set(s.id, { tenantId: s.tenantId, status: "active", turns: [], events: [], model: s.model });
  }

  async appendTurn(_tenantId: string, sessionId: string, record: TurnRecord, events: SequencedEvent[]): Promise<void> {
    const s = this.sessions.get(sessionId);
    s?.turns.push(record);
    s?.events.push(...events);
  }

  async appendEvents(_tenantId: string, sessionId: string, events: SequencedEvent[]): Promise<void> {
    this.sessions.get(sessionId)?.events.push(...events);
  }

  async setStatus(_tenantId: string, sessionId: string, status: SessionStatus): Promise<void> {
    const s = this.sessions.get(sessionId);
    if (s) s.status = status;
  }

  async putFeedback(_tenantId: string, sessionId: string, messageId: string, rating: string): Promise<void> {
    this.feedback.set(`${sessionId}/${messageId}`, rating);
  }
}
