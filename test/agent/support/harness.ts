import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { createAgent, defaultAgentLimits, type Agent, type AgentEvent, type AgentOptions, type ClientTool, type TurnInput } from "../../../src/agent/index.ts";
import type { ModelMessage } from "../../../src/models/index.ts";
import { resolved, type TestModel } from "./test-model.ts";

type TurnComplete = Extract<AgentEvent, { type: "turn_complete" }>;

/** Reads a turn's events in the background, as the session layer would. */
export class TurnRun {
  readonly events: AgentEvent[] = [];
  readonly done: Promise<TurnComplete>;
  #listeners = new Set<() => void>();

  constructor(events: AsyncIterable<AgentEvent>) {
    this.done = (async () => {
      for await (const e of events) {
        this.events.push(e);
        for (const l of this.#listeners) l();
      }
      const last = this.events.at(-1);
      if (last?.type !== "turn_complete") throw new Error(`turn ended without turn_complete (last: ${last?.type})`);
      return last;
    })();
    this.done.catch(() => undefined);
  }

  /** The first event (from `from` on) matching `pred`, waiting for it if needed. */
  waitFor<T extends AgentEvent = AgentEvent>(pred: (e: AgentEvent) => boolean, from = 0, timeoutMs = 10_000): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const hit = this.events.slice(from).find(pred);
        if (hit === undefined) return false;
        cleanup();
        resolve(hit as T);
        return true;
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`timed out waiting; events so far: ${this.events.map((e) => e.type).join(",")}`));
      }, timeoutMs);
      const cleanup = (): void => {
        clearTimeout(timer);
        this.#listeners.delete(listener);
      };
      const listener = (): void => {
        check();
      };
      if (check()) return;
      this.#listeners.add(listener);
      void this.done.then(() => {
        if (!check()) {
          cleanup();
          reject(new Error(`turn ended without the awaited event; events: ${this.events.map((e) => e.type).join(",")}`));
        }
      });
    });
  }

  /** The n-th (0-based) tool_request, waiting for it. */
  toolRequest(n = 0): Promise<Extract<AgentEvent, { type: "tool_request" }>> {
    return this.waitFor((e) => e.type === "tool_request" && this.of("tool_request").indexOf(e) === n);
  }

  of<K extends AgentEvent["type"]>(type: K): Extract<AgentEvent, { type: K }>[] {
    return this.events.filter((e): e is Extract<AgentEvent, { type: K }> => e.type === type);
  }
}

export function tool(name: string, extra: Partial<ClientTool> = {}): ClientTool {
  return { name, description: `${name} tool`, parametersSchema: { type: "object", properties: {} }, timeoutMs: 0, category: "unspecified", ...extra };
}

export function makeAgent(model: TestModel, options: Partial<AgentOptions> & { supportsImages?: boolean } = {}): Agent {
  const { supportsImages, ...rest } = options;
  return createAgent({
    model: resolved(model, supportsImages === undefined ? {} : { supportsImages }),
    tools: [],
    history: [],
    projectContext: [],
    maxContextTokens: 200_000,
    permissions: [],
    limits: { ...defaultAgentLimits },
    ...rest,
  });
}

export function turn(content: string, extra: Partial<TurnInput> = {}): TurnInput {
  return { messageId: randomUUID(), content, context: [], mode: "react", ...extra };
}

export function start(agent: Agent, input: TurnInput): TurnRun {
  return new TurnRun(agent.runTurn(input));
}

/**
 * Asserts the history is valid for a provider: every assistant tool use is answered, in
 * order, by the next message (a user message of tool results), every tool result answers
 * such a use, and no message is empty.
 */
export function expectValidHistory(history: readonly ModelMessage[]): void {
  history.forEach((m, i) => {
    expect(m.parts.length, `message ${i} is empty`).toBeGreaterThan(0);
    const uses = m.parts.filter((p) => p.type === "tool_use");
    const prev = history[i - 1];
    const answered = prev?.role === "assistant" ? prev.parts.filter((p) => p.type === "tool_use").map((p) => p.id) : [];
    const results = m.parts.filter((p) => p.type === "tool_result").map((p) => p.toolUseId);
    if (m.role === "user") expect(results, `results of message ${i}`).toEqual(answered.length > 0 ? answered : []);
    if (m.role === "assistant" && uses.length > 0) {
      const next = history[i + 1];
      expect(next?.role, `tool uses of message ${i} unanswered`).toBe("user");
    }
  });
  const ids = history.flatMap((m) => m.parts.filter((p) => p.type === "tool_use").map((p) => p.id));
  expect(new Set(ids).size, "tool_use ids unique").toBe(ids.length);
}

/**
 * Resolves once every promise reaction already queued has run (a macrotask boundary), so
 * whatever the agent does in answer to a call just made has been done. Not a timing guess:
 * the agent's reactions involve no timer and no I/O.
 */
export const reactionsDone = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
