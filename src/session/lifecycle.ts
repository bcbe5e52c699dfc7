import type { Agent } from "../agent/index.ts";
import type { ClientWaits } from "./client-waits.ts";
import type { Attachment, FanOut } from "./fan-out.ts";
import type { SessionDeps, SessionExtension, SessionStatus } from "./ports.ts";
import type { Sequencer } from "./sequencer.ts";
import type { StoreWriter } from "./store-writer.ts";
import type { TurnRunner } from "./turn-runner.ts";
import type { UserInputs } from "./user-inputs.ts";

export type EndStatus = Exclude<SessionStatus, "active" | "detached">;

export interface LifecycleInit {
  sessionId: string;
  tenantId: string;
  agent: Agent;
  deps: Pick<SessionDeps, "persistence" | "log" | "metrics" | "detachGraceMs">;
  streams: FanOut;
  waits: ClientWaits;
  sequencer: Sequencer;
  writer: StoreWriter;
  turns: TurnRunner;
  inputs: UserInputs;
  extension: SessionExtension | undefined;
  /** Ends the session through its registry, which forgets it once the end is stored. */
  end: (status: EndStatus, reason: string) => Promise<void>;
}

/**
 * A session's status over its life (§1, §6): streams attach and detach; with none attached
 * it is `detached` and ends after the detach grace unless one comes back; it ends for good
 * (`end`) or leaves this process resumable (`suspend`). Its live states are counted and stored.
 */
export class Lifecycle {
  readonly #init: LifecycleInit;
  #status: SessionStatus = "active";
  #ending: Promise<void> | undefined;
  #detachTimer: NodeJS.Timeout | undefined;
  /** Set when the detach grace ran out: the stored end says `abandoned`. */
  #abandoned = false;
  /** The live statuses being stored, one after another: a later one must not land first. */
  #statusWrites: Promise<void> = Promise.resolve();

  constructor(init: LifecycleInit) {
    this.#init = init;
    init.deps.metrics.sessionStatus("active", 1);
  }

  get status(): SessionStatus {
    return this.#status;
  }

  /** Set once the session is ending (or leaving this process): resolves when that is stored. */
  get ending(): Promise<void> | undefined {
    return this.#ending;
  }

  /** A stream attaches: the grace timer stops and a detached session is active again. */
  attached(attachment: Attachment): void {
    this.#stopGrace();
    this.#init.streams.add(attachment);
    if (this.#status === "detached") this.#setStatus("active");
  }

  /**
   * Detaches a stream. `closed` (a half-close): when it was the last attached stream, the
   * session ends as `completed` once its running turn and the turns of its waiting messages
   * have (cancelled if they wait for the client, whose answers can no longer come); the
   * stream stays attached until then, so it sees the end of those turns. `broken` (a transport break): with no stream left the session
   * is `detached` and waits `detachGraceMs` for one to come back.
   */
  async detach(attachment: Attachment, how: "closed" | "broken"): Promise<void> {
    const { streams, waits, turns } = this.#init;
    if (!streams.has(attachment)) return;
    if (how === "closed" && streams.size === 1 && this.#ending === undefined) {
      waits.inputClosed = true;
      await turns.settled();
      if (streams.has(attachment) && streams.size === 1) {
        await this.#init.end("completed", "client closed the stream");
        return;
      }
      waits.inputClosed = false;
    }
    streams.delete(attachment);
    this.waitForAttach();
  }

  /**
   * With no stream attached, the session is `detached` and ends after `detachGraceMs` unless
   * one attaches (also for a session rebuilt from the store, before its first attach).
   */
  waitForAttach(): void {
    if (this.#init.streams.size > 0 || this.#status !== "active" || this.#ending) return;
    this.#setStatus("detached");
    this.#detachTimer = setTimeout(() => {
      this.#detachTimer = undefined;
      this.#abandoned = true;
      void this.#init.end("cancelled", "detached session expired");
    }, this.#init.deps.detachGraceMs);
    this.#detachTimer.unref();
  }

  /**
   * Leaves this process without ending: the running turn is interrupted, everything is
   * stored (events, state, status `detached`), and the agent released. The next process
   * rebuilds the session from the store when a client re-attaches.
   */
  suspend(): Promise<void> {
    this.#ending ??= this.#suspend();
    return this.#ending;
  }

  async #suspend(): Promise<void> {
    const { deps, sessionId, turns, writer } = this.#init;
    this.#stopGrace();
    turns.interrupt();
    await turns.idle();
    this.#init.sequencer.flush();
    this.#init.streams.clear();
    this.#init.agent.dispose();
    await writer.flushEvents();
    try {
      await writer.storeLeaving("detached");
    } catch (err) {
      deps.log.error({ err, sessionId }, "could not persist detached session");
    }
    // The session leaves this process: it no longer counts here.
    deps.metrics.sessionStatus(this.#status, -1);
  }

  /**
   * Ends the session for good: cancels the running turn, waits for it to settle (so its
   * record is stored), then releases the agent and tells every attached stream. Idempotent:
   * every caller resolves once the end (with its final status) is stored.
   */
  end(status: EndStatus, reason: string): Promise<void> {
    this.#ending ??= this.#end(status, reason);
    return this.#ending;
  }

  async #end(status: EndStatus, reason: string): Promise<void> {
    const { deps, sessionId, tenantId, agent, turns } = this.#init;
    this.#stopGrace();
    this.#setStatus(status);
    // Workers first: a turn waiting for them then ends at once.
    try {
      this.#init.extension?.ended(status, reason);
    } catch (err) {
      deps.log.error({ err, sessionId }, "session extension failed at the end");
    }
    // Waiting messages are told they were dropped before the end (no turn starts once ending).
    this.#init.inputs.dropAll();
    agent.cancelTurn(reason);
    await turns.idle();
    this.#init.sequencer.emit({ type: "session_completed", status, reason, usage: turns.usage, turns: turns.turns });
    agent.dispose();
    const attached = this.#init.streams.clear();
    await this.#init.writer.flushEvents();
    try {
      await deps.persistence.setStatus(tenantId, sessionId, status, this.#abandoned ? "abandoned" : undefined);
    } catch (err) {
      deps.log.error({ err, sessionId }, "could not persist session end");
    }
    // Streams end only now: a client whose RPC ended may rely on the end being stored.
    for (const a of attached) a.ended();
  }

  #stopGrace(): void {
    if (this.#detachTimer) clearTimeout(this.#detachTimer);
    this.#detachTimer = undefined;
  }

  #setStatus(status: SessionStatus): void {
    const { deps, tenantId, sessionId } = this.#init;
    deps.metrics.sessionStatus(this.#status, -1);
    this.#status = status;
    // Live states are counted and stored here; `end()` stores a final one with the last events.
    if (status === "active" || status === "detached") {
      deps.metrics.sessionStatus(status, 1);
      this.#statusWrites = this.#statusWrites.then(() =>
        deps.persistence.setStatus(tenantId, sessionId, status).catch((err: unknown) => {
          deps.log.warn({ err, sessionId }, "could not persist session status");
        }),
      );
    }
  }
}
