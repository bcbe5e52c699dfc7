import { closest, distance } from "fastest-levenshtein";
import { parseSecretKey } from "../mcp/index.ts";
import { eventFormats } from "../rpc/index.ts";
import {
  bytes,
  fail,
  httpUrl,
  int,
  list,
  oneOf,
  optDays,
  optOneOf,
  optStr,
  otelFlag,
  type Parser,
  postgresUrl,
  type Setting,
  setting,
  str,
} from "./config-parsers.ts";

/** 32 bytes as 64 hex characters or base64; the value never appears in a message. */
const secretKey: Parser<string | undefined> = (raw, name) =>
  raw === "" ? undefined : parseSecretKey(raw) !== undefined ? raw.trim() : fail(name, "expected 32 random bytes written as 64 hex characters or as base64");

/**
 * Every setting of the server, in one table: the names are fixed (DESIGN.md), clients and
 * operators script against them. `--help` prints this table (after the commands of src/cli).
 */
export const settings = {
  host: setting("ROZ_HOST", "127.0.0.1", str, "address the one port listens on"),
  port: setting("ROZ_PORT", 8080, int(0, 65535), "the one port: HTTP/2 (h2c or TLS) and HTTP/1.1"),
  dataDir: setting("ROZ_DATA_DIR", "./data", str, "folder of the embedded store and other local state"),
  tlsCert: setting("ROZ_TLS_CERT", undefined, optStr, "PEM certificate file: serve TLS with ALPN h2 + http/1.1"),
  tlsKey: setting("ROZ_TLS_KEY", undefined, optStr, "PEM private key file (with ROZ_TLS_CERT)"),
  defaultModel: setting(
    "ROZ_DEFAULT_MODEL",
    undefined,
    optStr,
    "model for sessions that name none (provider/model)",
    "first provider's default, else scripted/default",
  ),
  openaiApiKey: setting("OPENAI_API_KEY", undefined, optStr, "configures provider `openai`"),
  openaiBaseURL: setting("OPENAI_BASE_URL", undefined, optStr, "base URL of provider `openai` (any OpenAI-compatible endpoint)"),
  openaiApi: setting(
    "ROZ_OPENAI_API",
    undefined,
    (raw, name) => (raw === "" ? undefined : oneOf("chat", "responses")(raw, name)),
    "API of provider `openai`: chat or responses",
    "responses on api.openai.com, else chat",
  ),
  anthropicApiKey: setting("ANTHROPIC_API_KEY", undefined, optStr, "configures provider `anthropic` (models `anthropic/<model>`)"),
  anthropicBaseURL: setting("ANTHROPIC_BASE_URL", undefined, optStr, "base URL of provider `anthropic` (a Messages API gateway)", "https://api.anthropic.com"),
  anthropicThinkingBudget: setting(
    "ROZ_ANTHROPIC_THINKING_BUDGET",
    0,
    (raw, name) => {
      const n = int(0, 1_000_000)(raw, name);
      return n !== 0 && n < 1024 ? fail(name, `must be 0 (off) or at least 1024 tokens, got ${n}`) : n;
    },
    "extended thinking budget (tokens) of provider `anthropic`; 0 = off",
  ),
  providersFile: setting("ROZ_PROVIDERS_FILE", undefined, optStr, "JSON/YAML file with more providers and aliases"),
  auth: setting("ROZ_AUTH", "required", oneOf("required", "disabled"), "required or disabled (open with a warning on loopback until a key exists)"),
  databaseUrl: setting("DATABASE_URL", undefined, postgresUrl, "PostgreSQL instead of the embedded store"),
  natsUrl: setting("NATS_URL", undefined, optStr, "NATS for the event bus and multi-node routing"),
  natsPrefix: setting("ROZ_NATS_PREFIX", "roz", str, "NATS subject prefix; the JetStream stream is <prefix>_events"),
  natsMaxAgeMs: setting("ROZ_NATS_MAX_AGE_MS", 86_400_000, int(1000, 365 * 86_400_000), "how long the NATS stream keeps events"),
  natsMaxBytes: setting("ROZ_NATS_MAX_BYTES", 1024 ** 3, bytes, "size limit of the NATS stream (oldest events discarded)", "1GiB"),
  natsReplicas: setting("ROZ_NATS_REPLICAS", 1, int(1, 5), "replicas of the NATS stream (3 on a NATS cluster)"),
  corsOrigins: setting("ROZ_CORS_ORIGINS", [] as string[], list, "comma-separated origins allowed for browser clients"),
  maxMessageBytes: setting("ROZ_MAX_MESSAGE_BYTES", 4 * 1024 * 1024, bytes, "largest request message (RPC) and REST body", "4MiB"),
  maxConcurrentStreams: setting("ROZ_MAX_CONCURRENT_STREAMS", 1000, int(1, 1_000_000), "HTTP/2 streams per connection"),
  shutdownGraceMs: setting("ROZ_SHUTDOWN_GRACE_MS", 10_000, int(0, 600_000), "how long shutdown waits for running turns"),
  http2PingIntervalMs: setting("ROZ_HTTP2_PING_INTERVAL_MS", 30_000, int(0, 3_600_000), "HTTP/2 keepalive PING interval (0 = off)"),
  handshakeTimeoutMs: setting(
    "ROZ_HANDSHAKE_TIMEOUT_MS",
    5_000,
    int(100, 600_000),
    "a new connection's time to show its protocol (preface / TLS handshake) and send HTTP/2 SETTINGS",
  ),
  headersTimeoutMs: setting(
    "ROZ_HEADERS_TIMEOUT_MS",
    10_000,
    int(100, 600_000),
    "time for HTTP/1.1 request headers, or an HTTP/2 connection's first stream, to arrive",
  ),
  maxConnectionsPerAddress: setting(
    "ROZ_MAX_CONNECTIONS_PER_ADDRESS",
    512,
    int(0, 1_000_000),
    "open connections from one remote address; more are closed at once (0 = no cap)",
  ),
  maxStreamsPerSecond: setting(
    "ROZ_HTTP2_MAX_STREAMS_PER_SECOND",
    1000,
    int(0, 1_000_000),
    "HTTP/2 streams one connection may open within any one second; beyond it GOAWAY and close (rapid-reset guard, 0 = off)",
  ),
  startTimeoutMs: setting(
    "ROZ_START_TIMEOUT_MS",
    30_000,
    int(0, 86_400_000),
    "a session stream that sends no start within it ends with invalid_argument (0 = never)",
  ),
  maxStreamsPerKey: setting(
    "ROZ_MAX_STREAMS_PER_KEY",
    1000,
    int(0, 10_000_000),
    "session streams open at once per API key; more get resource_exhausted (0 = no cap)",
  ),
  credentialRecheckMs: setting(
    "ROZ_CREDENTIAL_RECHECK_MS",
    1000,
    int(0, 3_600_000),
    "how often an open stream re-checks its key on its next request (revoked or expired: unauthenticated); a key revoked or rotated through this server is checked at once",
  ),
  maxResetsPerSecond: setting(
    "ROZ_HTTP2_MAX_RESETS_PER_SECOND",
    100,
    int(0, 1_000_000),
    "HTTP/2 streams one connection may cancel (RST_STREAM) within any one second; beyond it GOAWAY and close (0 = off)",
  ),
  keepaliveIntervalMs: setting("ROZ_KEEPALIVE_INTERVAL_MS", 15_000, int(100, 3_600_000), "Keepalive message interval on session streams"),
  logLevel: setting(
    "ROZ_LOG_LEVEL",
    "info",
    oneOf("fatal", "error", "warn", "info", "debug", "trace", "silent"),
    "log level; debug adds a line per request (failed and slow ones are at info)",
  ),
  logFormat: setting("ROZ_LOG_FORMAT", "json", oneOf("json", "pretty"), "log lines: json (one object per line) or pretty (time, level, message, key=value)"),
  maxContextTokens: setting("ROZ_MAX_CONTEXT_TOKENS", 200_000, int(1000, 10_000_000), "default StartSession.max_context_tokens"),
  maxCycles: setting("ROZ_MAX_CYCLES", 200, int(1, 100_000), "model cycles per turn"),
  toolErrorLimit: setting("ROZ_TOOL_ERROR_LIMIT", 3, int(1, 1000), "consecutive all-failed tool cycles before tool_error_limit"),
  approvalTimeoutMs: setting("ROZ_APPROVAL_TIMEOUT_MS", 300_000, int(100, 86_400_000), "how long a require_confirmation call waits"),
  defaultToolTimeoutMs: setting("ROZ_TOOL_TIMEOUT_MS", 120_000, int(100, 86_400_000), "tool timeout when ToolSchema.timeout_ms is 0"),
  toolResultMaxTokens: setting("ROZ_TOOL_RESULT_MAX_TOKENS", 8_000, int(100, 1_000_000), "tool result budget shown to the model"),
  toolResultEchoBytes: setting(
    "ROZ_TOOL_RESULT_ECHO_BYTES",
    16_384,
    int(0, 4 * 1024 * 1024),
    "UTF-8 bytes of a tool result that ToolFinished carries to every attached client (0 = no result text)",
  ),
  maxTools: setting("ROZ_MAX_TOOLS", 1000, int(1, 1_000_000), "tools one session may hold (register_tools beyond it: invalid_argument)"),
  maxToolsPerRequest: setting("ROZ_MAX_TOOLS_PER_REQUEST", 512, int(1, 1_000_000), "tools one start, user_message or register_tools may carry"),
  permissionRules: setting("ROZ_PERMISSION_RULES", undefined, optStr, "JSON list of default permission rules [{tool_pattern, policy, reason?}]"),
  sqliteSynchronous: setting(
    "ROZ_SQLITE_SYNCHRONOUS",
    "normal",
    oneOf("normal", "full"),
    "SQLite durability: normal survives a process crash; full also a power loss (fsync per commit, slower)",
  ),
  detachGraceMs: setting(
    "ROZ_DETACH_GRACE_MS",
    600_000,
    int(0, 86_400_000),
    "how long a detached session stays resumable (then it ends: cancelled, end_reason abandoned)",
  ),
  maxQueuedInputs: setting("ROZ_MAX_QUEUED_INPUTS", 16, int(1, 10_000), "user messages that may wait in one session while a turn runs (queued or steered)"),
  sessionRetentionDays: setting("ROZ_SESSION_RETENTION_DAYS", undefined, optDays, "delete ended sessions this many days after they end", "unset"),
  eventRetention: setting("ROZ_EVENT_RETENTION", 10_000, int(0, 10_000_000), "session events kept per session for resume"),
  rateLimitPerMinute: setting("ROZ_RATE_LIMIT_PER_MINUTE", 600, int(0, 10_000_000), "REST requests per key per minute (0 = off)"),
  // A guard against runaway clients, not a quota: a client's test suite or a reconnect storm
  // of a few hundred sessions must not be refused (a refused start is fatal for the stream).
  sessionRateLimitPerMinute: setting("ROZ_SESSION_RATE_LIMIT_PER_MINUTE", 600, int(0, 10_000_000), "sessions started per key per minute (0 = off)"),
  eventFormat: setting(
    "ROZ_EVENT_FORMAT",
    "flat",
    oneOf(...eventFormats),
    "session events for streams whose roz-event-format metadata chooses none: flat (v0.2), envelope (upstream main) or both",
  ),
  teamMaxWorkersPerTask: setting("ROZ_TEAM_MAX_WORKERS_PER_TASK", 8, int(1, 10_000), "workers one task may have"),
  teamMaxRunningWorkersPerTenant: setting("ROZ_TEAM_MAX_RUNNING_WORKERS_PER_TENANT", 32, int(1, 100_000), "workers running at once per tenant"),
  teamMaxSpawnDepth: setting(
    "ROZ_TEAM_MAX_SPAWN_DEPTH",
    1,
    int(1, 10),
    "deepest worker level: 1 = only sessions and REST start workers, 2 = workers may spawn once more, …",
  ),
  teamsDefault: setting(
    "ROZ_TEAMS_DEFAULT",
    "off",
    oneOf("on", "off"),
    "on: sessions whose environment does not say teams.enabled false get the team tools (spawn_worker, wait_for_workers)",
  ),
  workerTimeoutMs: setting("ROZ_WORKER_TIMEOUT_MS", 600_000, int(100, 86_400_000), "time limit of one worker (then it fails with timeout)"),
  consoleDir: setting("ROZ_CONSOLE_DIR", undefined, optStr, "folder of the built web console served at / (`off`: no console)", "web/dist of this installation"),
  nodeId: setting("ROZ_NODE_ID", undefined, optStr, "this node's id; a set one is waited for after a crash until its heartbeat expires", "hostname-pid-random"),
  nodeHeartbeatMs: setting("ROZ_NODE_HEARTBEAT_MS", 5_000, int(100, 600_000), "how often this node writes its heartbeat to the store"),
  nodeExpiryMs: setting(
    "ROZ_NODE_EXPIRY_MS",
    20_000,
    int(200, 3_600_000),
    "a node silent this long is gone: its sessions may be adopted (a dead process of this host is gone at once)",
  ),
  secretKey: setting("ROZ_SECRET_KEY", undefined, secretKey, "32-byte key (64 hex characters or base64) sealing MCP server credentials at rest (AES-256-GCM)"),
  mcpCallTimeoutMs: setting("ROZ_MCP_CALL_TIMEOUT_MS", 60_000, int(100, 3_600_000), "time limit of one MCP server request (a tool call, a tool listing)"),
  mcpAllowPrivate: setting("ROZ_MCP_ALLOW_PRIVATE", "0", oneOf("0", "1"), "1: MCP server URLs may reach loopback, private and link-local addresses"),
  publicUrl: setting(
    "ROZ_PUBLIC_URL",
    undefined,
    httpUrl,
    "this server's address as a browser reaches it: OAuth for MCP servers redirects to {ROZ_PUBLIC_URL}/v1/mcp/oauth/callback",
    "http://{ROZ_HOST}:{ROZ_PORT}",
  ),
  // OpenTelemetry's own names (the SDK also reads its other OTEL_* variables: headers, timeout, batching, sampler).
  otlpEndpoint: setting(
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    undefined,
    httpUrl,
    "OTLP/HTTP base URL: set, traces are exported to <url>/v1/traces",
    "unset: no tracing",
  ),
  otlpTracesEndpoint: setting(
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    undefined,
    httpUrl,
    "the full URL traces are sent to (wins over OTEL_EXPORTER_OTLP_ENDPOINT)",
  ),
  otlpProtocol: setting("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", oneOf("http/protobuf", "http/json"), "OTLP encoding: http/protobuf or http/json"),
  otlpTracesProtocol: setting(
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    undefined,
    optOneOf("http/protobuf", "http/json"),
    "OTLP encoding of traces (wins over OTEL_EXPORTER_OTLP_PROTOCOL)",
  ),
  otelServiceName: setting("OTEL_SERVICE_NAME", "roz", str, "service.name of the traces"),
  otelCaptureContent: setting(
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    false,
    otelFlag,
    "true: spans also record prompts, completions, tool arguments and results",
  ),
  otelSdkDisabled: setting("OTEL_SDK_DISABLED", false, otelFlag, "true: no tracing, even with an endpoint"),
} as const;

type Settings = typeof settings;
export type Config = { [K in keyof Settings]: Settings[K]["default"] };

/**
 * Reads and validates every setting from `env`. Throws a RozError (`config_invalid`)
 * whose message names the variable.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(settings) as [string, Setting<unknown>][]) {
    const raw = env[s.env];
    out[key] = raw === undefined ? s.default : s.parse(raw, s.env);
  }
  const config = out as Config;
  if (config.nodeExpiryMs <= config.nodeHeartbeatMs) fail("ROZ_NODE_EXPIRY_MS", "must be longer than ROZ_NODE_HEARTBEAT_MS");
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) {
    fail(config.tlsCert === undefined ? "ROZ_TLS_CERT" : "ROZ_TLS_KEY", "ROZ_TLS_CERT and ROZ_TLS_KEY must be set together");
  }
  return config;
}

/** `ROZ_*` names that are not server settings but are used around it (clients, the test suite). */
const knownNonSettings = new Set(["ROZ_KEY", "ROZ_URL", "ROZ_TEST_DATABASE_URL", "ROZ_REQUIRE_POSTGRES", "ROZ_PG_BIN", "ROZ_BENCH_SPEC"]);

/**
 * One warning per `ROZ_*` variable in `env` that is no setting (a typo would otherwise be
 * ignored silently), naming the closest setting when one is near enough to be the intent.
 */
export function unknownVariableWarnings(env: Record<string, string | undefined> = process.env): string[] {
  const known = (Object.values(settings) as Setting<unknown>[]).map((s) => s.env).filter((name) => name.startsWith("ROZ_"));
  return Object.keys(env)
    .filter((name) => name.startsWith("ROZ_") && !known.includes(name) && !knownNonSettings.has(name))
    .sort()
    .map((name) => {
      const guess = closest(name, known);
      // Close enough to be a typo: a couple of edits, more for long names.
      const near = distance(name, guess) <= Math.max(2, Math.floor(name.length / 4));
      return near ? `unknown variable ${name} (did you mean ${guess}?)` : `unknown variable ${name} is ignored (see roz --help)`;
    });
}

/** The settings part of `--help`: every variable with its default. */
export function settingsHelp(): string {
  const rows = Object.values(settings) as Setting<unknown>[];
  const width = Math.max(...rows.map((r) => r.env.length));
  return ["configuration (environment variables):", ...rows.map((r) => `  ${r.env.padEnd(width)}  ${r.description} (default: ${r.defaultText})`)].join("\n");
}

/** `ROZ_PUBLIC_URL`'s default: `http://{ROZ_HOST}:{ROZ_PORT}` (https with TLS). */
export function defaultPublicUrl(config: Pick<Config, "host" | "port" | "tlsCert">): string {
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  return `${config.tlsCert !== undefined ? "https" : "http"}://${host}:${config.port}`;
}

/** Loopback addresses: where an open (key-less) server is tolerated. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host.startsWith("127.") || host === "[::1]";
}
