/**
 * The `roz` command: runs the server, or a sub-command (`roz keys create …`, `roz budgets set …`, `roz chat`).
 * Configuration comes from the environment (see `--help`).
 */
import { loadConfig, unknownVariableWarnings } from "./app/config.ts";
import { RozError } from "./errors/index.ts";
import { runCommand } from "./cli/index.ts";

/** Sub-commands print results on stdout and hints on stderr. */
const io = { out: (text: string) => console.log(text), err: (text: string) => console.error(text) };

async function main(argv: string[]): Promise<number> {
  // Before anything can fail: a mistyped variable is often why it does.
  for (const warning of unknownVariableWarnings(process.env)) console.error(`roz: warning: ${warning}`);
  const command = runCommand(argv, io);
  if (command !== undefined) return command;
  const config = loadConfig();
  // Loaded only to run the server: sub-commands such as `roz keys` start faster without it.
  const { createApp } = await import("./app/app.ts");
  const app = await createApp(config);
  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    app.fastify.log.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
    app.close().then(
      () => {
        app.fastify.log.info({ signal }, "stopped");
        process.exit(0);
      },
      (err: unknown) => {
        app.fastify.log.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
  const url = await app.listen();
  if (app.models.offline) {
    app.fastify.log.warn(
      { defaultModel: app.models.defaultModel },
      "no model provider configured: sessions use the offline scripted model (set OPENAI_API_KEY / OPENAI_BASE_URL or ROZ_PROVIDERS_FILE)",
    );
  }
  app.fastify.log.info({ url, defaultModel: app.models.defaultModel }, `roz listening on ${url}`);
  return -1;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof RozError) {
      console.error(`roz: ${err.message}`);
      process.exit(2);
    }
    console.error(err);
    process.exit(1);
  },
);
