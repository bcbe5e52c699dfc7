import { connect, type NatsConnection } from "@nats-io/transport-node";
import { RozError } from "../../errors/index.ts";
import type { BusHealth } from "../types.ts";
import type { NatsBusOptions } from "./options.ts";

/** Connects to the first server of the list that answers; the client reconnects forever after. Rejects with `unavailable`. */
export async function connectNats(options: NatsBusOptions): Promise<NatsConnection> {
  try {
    return await connect({
      servers: options.servers
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== ""),
      name: options.connectionName ?? "roz",
      maxReconnectAttempts: -1,
      // Publishes and requests made while reconnecting wait in the client until it is back.
      reconnectTimeWait: options.reconnectWaitMs ?? 500,
    });
  } catch (err) {
    throw new RozError("unavailable", `cannot connect to NATS at ${options.servers}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/**
 * Follows the connection's status for `/readyz` and `/metrics`, tells `onStatus` (logs), and
 * runs `onReconnect` after each reconnection.
 */
export class ConnectionHealth {
  #connected = true;
  #reconnects = 0;
  #lastError: string | undefined;

  constructor(nc: NatsConnection, onStatus: NatsBusOptions["onStatus"], onReconnect: () => Promise<void>) {
    void this.#watch(nc, onStatus, onReconnect);
  }

  async #watch(nc: NatsConnection, onStatus: NatsBusOptions["onStatus"], onReconnect: () => Promise<void>): Promise<void> {
    for await (const s of nc.status()) {
      switch (s.type) {
        case "disconnect":
          this.#connected = false;
          this.#lastError = `disconnected from ${s.server}`;
          onStatus?.({ type: s.type, server: s.server });
          break;
        case "reconnect":
          this.#connected = true;
          this.#reconnects++;
          this.#lastError = undefined;
          onStatus?.({ type: s.type, server: s.server });
          onReconnect().catch((err: unknown) =>
            onStatus?.({ type: "error", error: `stream setup after reconnect: ${err instanceof Error ? err.message : String(err)}` }),
          );
          break;
        case "error":
          this.#lastError = s.error.message;
          onStatus?.({ type: s.type, error: s.error.message });
          break;
        case "close":
          this.#connected = false;
          onStatus?.({ type: s.type });
          return;
        default:
      }
    }
  }

  health(): BusHealth {
    return { connected: this.#connected, reconnects: this.#reconnects, ...(this.#lastError && !this.#connected ? { error: this.#lastError } : {}) };
  }
}
