import { randomUUID } from "node:crypto";
import type { ModelMessage } from "../models/index.ts";

/**
 * Hands out tool call ids that are unique within the session: the provider's id where it
 * gives a fresh one, otherwise that id with a numeric suffix (or a random id when it gave
 * none). Seeded with the ids of the restored history.
 */
export class ToolCallIds {
  #used = new Set<string>();

  constructor(history: readonly ModelMessage[]) {
    for (const m of history) for (const p of m.parts) if (p.type === "tool_use") this.#used.add(p.id);
  }

  /** A unique id for a call the provider named `providerId`. */
  claim(providerId: string): string {
    if (providerId === "") return this.fresh("call");
    let id = providerId;
    for (let n = 2; this.#used.has(id); n++) id = `${providerId}_${n}`;
    this.#used.add(id);
    return id;
  }

  /** A new id for a call the server makes itself (OODA observations). */
  fresh(prefix: string): string {
    const id = `${prefix}_${randomUUID()}`;
    this.#used.add(id);
    return id;
  }
}
