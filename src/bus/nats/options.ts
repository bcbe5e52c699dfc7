export interface NatsBusOptions {
  /** `NATS_URL`: one URL or a comma-separated list (`nats://host:4222,…`). */
  servers: string;
  /**
   * Names this deployment's share of the NATS account: the stream is `<prefix>_events`
   * holding `<prefix>.ev.>`; requests travel on `<prefix>.rq.…` and direct lines on
   * `<prefix>.dl.…` (core NATS, never stored).
   */
  prefix?: string;
  /** Stream limits: the oldest messages are discarded past either. */
  maxAgeMs?: number;
  maxBytes?: number;
  /** Stream replicas (a clustered NATS needs 3 for fault tolerance; a single server 1). */
  replicas?: number;
  /** How long to wait between reconnect attempts. */
  reconnectWaitMs?: number;
  /** Shown in the server's connection list. */
  connectionName?: string;
  /** Told about connection changes (for logs). */
  onStatus?: (event: { type: string; server?: string; error?: string }) => void;
}

/** Messages buffered for a slow reader of a subscription or a line, unless it asks otherwise. */
export const DEFAULT_MAX_PENDING = 10_000;
