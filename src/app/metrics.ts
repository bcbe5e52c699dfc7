import { performance } from "node:perf_hooks";
import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { TurnRecord } from "../agent/index.ts";
import type { EventBus } from "../bus/index.ts";
import { type ModelAdapter, type ModelCatalog, type ModelEventSink, type ModelRequest, pushEvents, streamOf, wrapAdapters } from "../models/index.ts";
import type { SessionMetrics, SessionStatus } from "../session/index.ts";

/** Model events that count as the first token of a response. */
const FIRST_TOKEN = new Set(["text_delta", "thinking_delta", "tool_call"]);

/** The Prometheus metrics of one app (its own `Registry`: several apps may share a process). */
export interface Metrics {
  readonly registry: Registry;
  /** What `SessionDeps.metrics` gets. */
  readonly session: SessionMetrics;
  /** Times one store operation (`storePersistence`'s `observe`). */
  observeStore<T>(op: string, run: () => Promise<T>): Promise<T>;
  /** The catalog with every adapter timed (time to first token per provider). */
  timeModels(catalog: ModelCatalog): ModelCatalog;
  /** Counts every HTTP response (REST and RPC) by method, route and status. */
  registerHttp(app: FastifyInstance): void;
  /** A session stream of a key at its cap was refused before routing (counted as its HTTP response too). */
  refusedEarly(route: string): void;
  /** Event-loop blocks over the watchdog's threshold. */
  readonly eventLoopBlocks: Counter;
  /** Exposes the node (`roz_node_info`) and its bus's connection: state gauge and reconnect counter. */
  observeBus(bus: EventBus, nodeId: string): void;
  /** What a model call cost, USD (`roz_cost_usd_total` by tenant name and `provider/model`; 0 for an unpriced model). */
  costSpent(tenant: string, model: string, usd: number): void;
  /** Streams relayed between nodes: `client` ones this node serves for sessions of other nodes, `owner` ones it hosts for other nodes' clients. */
  observeRelay(relay: { readonly relayedStreams: number; readonly hostedStreams: number }): void;
}

const seconds = (since: number): number => (performance.now() - since) / 1000;

/** Builds the metrics of one app, with Node's default process metrics (prefixed `roz_`). */
export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "roz_" });
  const sessions = new Gauge({
    name: "roz_sessions",
    help: "Live sessions on this node by status (active, detached)",
    labelNames: ["status"],
    registers: [registry],
  });
  sessions.set({ status: "active" }, 0);
  sessions.set({ status: "detached" }, 0);
  const turns = new Counter({ name: "roz_turns_total", help: "Finished turns by stop reason", labelNames: ["stop_reason"], registers: [registry] });
  const tokens = new Counter({
    name: "roz_tokens_total",
    help: "Model tokens by kind (input includes cache_read; cache_creation where the provider reports it)",
    labelNames: ["kind"],
    registers: [registry],
  });
  const turnSeconds = new Histogram({
    name: "roz_turn_duration_seconds",
    help: "Wall time of a turn, tool round trips included",
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900],
    registers: [registry],
  });
  const firstToken = new Histogram({
    name: "roz_model_time_to_first_token_seconds",
    help: "From a model request to its first text, thinking or tool-call event",
    labelNames: ["provider"],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32],
    registers: [registry],
  });
  const toolRoundTrip = new Histogram({
    name: "roz_tool_round_trip_seconds",
    help: "From a tool request (after approval) to the client's result",
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300],
    registers: [registry],
  });
  const errors = new Counter({
    name: "roz_errors_total",
    help: "Errors reported to clients and internal failures, by code",
    labelNames: ["code"],
    registers: [registry],
  });
  const storeSeconds = new Histogram({
    name: "roz_store_operation_seconds",
    help: "Latency of store operations by operation and outcome",
    labelNames: ["op", "outcome"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [registry],
  });
  const eventLoopBlocks = new Counter({
    name: "roz_event_loop_blocks_total",
    help: "Times the event loop was blocked longer than the watchdog threshold (100 ms); see roz_nodejs_eventloop_lag_* for the distribution",
    registers: [registry],
  });
  const http = new Counter({
    name: "roz_http_requests_total",
    help: "HTTP responses by method, route and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const cost = new Counter({
    name: "roz_cost_usd_total",
    help: "What model calls cost in USD (providers file prices; 0 for a model without one), sessions' and team workers' calls, by tenant and model",
    labelNames: ["tenant", "model"],
    registers: [registry],
  });
  const refusedEarly = new Counter({
    name: "roz_streams_refused_early_total",
    help: "Session streams of a key at its stream cap refused with resource_exhausted before routing (also in roz_http_requests_total)",
    registers: [registry],
  });

  const session: SessionMetrics = {
    sessionStatus(status: SessionStatus, delta: number) {
      if (status === "active" || status === "detached") sessions.inc({ status }, delta);
    },
    turnCompleted(record: TurnRecord) {
      turns.inc({ stop_reason: record.stopReason });
      tokens.inc({ kind: "input" }, record.usage.inputTokens);
      tokens.inc({ kind: "output" }, record.usage.outputTokens);
      tokens.inc({ kind: "cache_read" }, record.usage.cacheReadTokens);
      tokens.inc({ kind: "cache_creation" }, record.usage.cacheCreationTokens);
      turnSeconds.observe(Math.max(0, record.endedAt - record.startedAt) / 1000);
      for (const call of record.toolCalls) {
        // Calls without a client result (denied, unknown, cancelled) made no round trip.
        if (call.outcome) toolRoundTrip.observe(Math.max(0, call.endedAt - call.startedAt) / 1000);
      }
    },
    error(code: string) {
      errors.inc({ code });
    },
  };

  // A callback on the pushed events, not a generator around the adapter: no hop per event.
  const timeAdapter = (adapter: ModelAdapter): ModelAdapter => {
    const timed = (sink: ModelEventSink): ModelEventSink => {
      const started = performance.now();
      let first = true;
      return (event) => {
        if (first && FIRST_TOKEN.has(event.type)) {
          first = false;
          firstToken.observe({ provider: adapter.provider }, seconds(started));
        }
        sink(event);
      };
    };
    const streamTo = (request: ModelRequest, sink: ModelEventSink) => pushEvents(adapter, request, timed(sink));
    return { provider: adapter.provider, stream: (request) => streamOf(streamTo, request), streamTo };
  };

  return {
    registry,
    session,
    eventLoopBlocks,
    async observeStore(op, run) {
      const started = performance.now();
      try {
        const result = await run();
        storeSeconds.observe({ op, outcome: "ok" }, seconds(started));
        return result;
      } catch (err) {
        storeSeconds.observe({ op, outcome: "error" }, seconds(started));
        throw err;
      }
    },
    timeModels(catalog) {
      return wrapAdapters(catalog, timeAdapter);
    },
    observeRelay(relay) {
      new Gauge({
        name: "roz_relayed_streams",
        help: "Session streams relayed between nodes: side=client (this node's clients, sessions owned elsewhere), side=owner (hosted here for other nodes' clients)",
        labelNames: ["side"],
        registers: [registry],
        collect() {
          this.set({ side: "client" }, relay.relayedStreams);
          this.set({ side: "owner" }, relay.hostedStreams);
        },
      });
    },
    observeBus(bus, nodeId) {
      new Gauge({ name: "roz_node_info", help: "This node: its id and its bus (always 1)", labelNames: ["node_id", "bus"], registers: [registry] }).set(
        { node_id: nodeId, bus: bus.kind },
        1,
      );
      new Gauge({
        name: "roz_bus_connected",
        help: "1 while the event bus is connected (always 1 for the in-memory bus), by bus kind",
        labelNames: ["bus"],
        registers: [registry],
        collect() {
          this.set({ bus: bus.kind }, (bus.health?.().connected ?? true) ? 1 : 0);
        },
      });
      let counted = 0;
      new Counter({
        name: "roz_bus_reconnects_total",
        help: "Reconnections of the event bus to its server, by bus kind",
        labelNames: ["bus"],
        registers: [registry],
        collect() {
          const now = bus.health?.().reconnects ?? 0;
          this.inc({ bus: bus.kind }, now - counted);
          counted = now;
        },
      });
    },
    registerHttp(app) {
      app.addHook("onResponse", async (request, reply) => {
        http.inc({ method: request.method, route: request.routeOptions.url ?? "unmatched", status: String(reply.statusCode) });
      });
    },
    costSpent(tenant, model, usd) {
      cost.inc({ tenant, model }, Math.max(0, usd));
    },
    refusedEarly(route) {
      refusedEarly.inc();
      // gRPC answers with HTTP 200, its status in the trailers, as the routed refusal does.
      http.inc({ method: "POST", route, status: "200" });
    },
  };
}
