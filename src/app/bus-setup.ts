import type { FastifyBaseLogger } from "fastify";
import { createMemoryBus, createNatsBus, type EventBus } from "../bus/index.ts";
import type { Config } from "./config.ts";

/** The bus node `nodeId` uses: NATS JetStream when `NATS_URL` is set, else the embedded in-memory one. */
export async function openBus(config: Config, nodeId: string, log: FastifyBaseLogger): Promise<EventBus> {
  if (!config.natsUrl) return createMemoryBus();
  const bus = await createNatsBus({
    servers: config.natsUrl,
    prefix: config.natsPrefix,
    maxAgeMs: config.natsMaxAgeMs,
    maxBytes: config.natsMaxBytes,
    replicas: config.natsReplicas,
    connectionName: `roz ${nodeId}`,
    onStatus: (event) => {
      if (event.type === "disconnect") log.warn({ server: event.server }, "NATS disconnected; reconnecting");
      else if (event.type === "reconnect") log.info({ server: event.server }, "NATS reconnected");
      else if (event.type === "error") log.warn({ error: event.error }, "NATS error");
    },
  });
  log.info({ stream: `${config.natsPrefix}_events` }, "event bus: NATS JetStream");
  return bus;
}

/** The `/readyz` check of the bus: not ready while a networked bus is disconnected. */
export function busReadiness(bus: EventBus): { name: string; ok: boolean; error?: string } {
  const health = bus.health?.();
  if (health === undefined || health.connected) return { name: "bus", ok: true };
  return { name: "bus", ok: false, error: health.error ?? `${bus.kind} bus disconnected` };
}
