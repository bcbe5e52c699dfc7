/**
 * The test tiers: every test file belongs to exactly one (test/tiers/tiers.test.ts checks it).
 * `npm test` runs the fast tier, the one for every save; `npm run test:all` (and CI) runs them
 * all, each as its own vitest run (test/tiers/run.ts), and prints each tier's wall time.
 * vitest.config.ts makes each tier a project of the same name.
 */

export interface Tier {
  readonly name: string;
  /** What belongs here, for the reader choosing a tier for a new file. */
  readonly holds: string;
  /** Globs relative to the repository root; a folder glob takes the whole folder. */
  readonly include: readonly string[];
}

export const tiers: readonly Tier[] = [
  {
    name: "fast",
    holds: "unit and in-process tests, one real-socket session test per client library, one SQLite restart smoke",
    include: [
      "test/agent/**/*.test.ts",
      "test/compat/**/*.test.ts",
      "test/conformance/**/*.test.ts",
      "test/envelope/**/*.test.ts",
      "test/mcp/**/*.test.ts",
      "test/models/**/*.test.ts",
      "test/rest/**/*.test.ts",
      "test/rpc/**/*.test.ts",
      "test/tiers/**/*.test.ts",
      "test/errors.test.ts",
      "test/auth/authenticator.test.ts",
      "test/client/session.test.ts",
      "test/auth/isolation.test.ts",
      "test/bus/memory.test.ts",
      "test/bus/nats.test.ts",
      "test/durability/conversation-sqlite.test.ts",
      "test/reflection/descriptor-index.test.ts",
      "test/reflection/grpc-js-client.test.ts",
      "test/server/bad-input.test.ts",
      "test/server/connect-protocols.test.ts",
      "test/server/grpc-js-session.test.ts",
      "test/server/keepalive.test.ts",
      "test/server/log-format.test.ts",
      "test/server/lifecycle.test.ts",
      "test/server/one-port-rest.test.ts",
      "test/server/stream-writes.test.ts",
      "test/server/tls.test.ts",
      "test/session/anthropic-transcript.test.ts",
      "test/session/anthropic.test.ts",
      "test/session/async-queue.test.ts",
      "test/session/cancel.test.ts",
      "test/session/context.test.ts",
      "test/session/conversation-control.test.ts",
      "test/session/deltas.test.ts",
      "test/session/event-log.test.ts",
      "test/session/fork.test.ts",
      "test/session/leak.test.ts",
      "test/session/lifecycle.test.ts",
      "test/session/permissions.test.ts",
      "test/session/reattach.test.ts",
      "test/session/refusal-rollback.test.ts",
      "test/session/rollback.test.ts",
      "test/session/snapshot.test.ts",
      "test/session/state-writes.test.ts",
      "test/session/stop-reasons.test.ts",
      "test/session/store-failure.test.ts",
      "test/session/team-tools.test.ts",
      "test/session/tool-finished.test.ts",
      "test/session/tools.test.ts",
      "test/session/transcript.test.ts",
      "test/session/transport.test.ts",
      "test/spend/budgets.test.ts",
      "test/spend/cost.test.ts",
      "test/spend/two-nodes.test.ts",
      "test/store/postgres.test.ts",
      "test/store/sqlite.test.ts",
      "test/teams/approval-timeout.test.ts",
      "test/teams/cancel.test.ts",
      "test/teams/clients.test.ts",
      "test/teams/limits-isolation.test.ts",
      "test/teams/rest-session.test.ts",
      "test/teams/rest-tasks.test.ts",
      "test/teams/session-team.test.ts",
      "test/teams/tool-finished.test.ts",
      "test/teams/watch.test.ts",
    ],
  },
  {
    name: "processes",
    holds: "real server processes and CLIs: restarts, crashes, startup, durability on both stores, external tools; tests that mock a module (isolated here)",
    include: [
      "test/deployment/**/*.test.ts",
      "test/support/**/*.test.ts",
      "test/layers.test.ts",
      "test/auth/cli.test.ts",
      "test/cli/chat.test.ts",
      "test/client/breaks.test.ts",
      "test/client/example.test.ts",
      "test/client/team.test.ts",
      "test/auth/open-mode.test.ts",
      "test/server/mcp-logs.test.ts",
      "test/server/logs.test.ts",
      "test/bus/nats-restart.test.ts",
      "test/durability/conversation-postgres.test.ts",
      "test/durability/crash-postgres.test.ts",
      "test/durability/crash-sqlite.test.ts",
      "test/durability/orphans-postgres.test.ts",
      "test/durability/orphans-sqlite.test.ts",
      "test/durability/restart-postgres.test.ts",
      "test/durability/restart-sqlite.test.ts",
      "test/examples/**/*.test.ts",
      "test/reflection/buf-curl.test.ts",
      "test/server/cli.test.ts",
      "test/server/startup.test.ts",
      "test/server/startup-unwind.test.ts",
      "test/server/traces.test.ts",
      "test/session/reconnect-storm.test.ts",
      "test/spend/cli.test.ts",
      "test/store/sqlite-large-params.test.ts",
      "test/teams/restart.test.ts",
    ],
  },
  {
    name: "abuse",
    holds: "hostile clients at regression size (the benches in bench/ carry the full-size attacks)",
    include: ["test/abuse/**/*.test.ts"],
  },
  {
    name: "browser",
    holds: "Chromium driving the console and Connect-Web (one shared browser, test/support/chromium.ts)",
    include: ["test/browser/**/*.test.ts", "test/web/**/*.test.ts", "test/teams/browser.test.ts"],
  },
  {
    name: "cluster",
    holds: "several roz processes behind HAProxy on NATS and PostgreSQL (one shared topology, test/support/cluster.ts)",
    include: ["test/cluster/**/*.test.ts"],
  },
  {
    name: "image",
    holds: "the image built from the Dockerfile and docker-compose.yml run on podman (base images made by deploy/test/)",
    include: ["test/image/**/*.test.ts"],
  },
];

/** The session suites of spec §1–§4 that run again on provider `anthropic`, with the fast tier. */
export const onEveryProvider = [
  "test/session/cancel.test.ts",
  "test/session/deltas.test.ts",
  "test/session/lifecycle.test.ts",
  "test/session/permissions.test.ts",
  "test/session/rollback.test.ts",
  "test/session/stop-reasons.test.ts",
  "test/session/tools.test.ts",
] as const;

/** The vitest projects each tier runs (the fast tier also runs the provider variant). */
export const projectsOf = (tier: Tier): string[] => (tier.name === "fast" ? ["fast", "anthropic"] : [tier.name]);
