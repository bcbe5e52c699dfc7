/**
 * The repository's docker-compose.yml run for real: two roz nodes from the project's image,
 * PostgreSQL, NATS and HAProxy, driven by Debian's docker-compose 1.29 through podman's
 * Docker-compatible API. `prepareImages` makes every image; `startTopology` gives the compose
 * commands of a first run, and `close` takes the project down with its volumes.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { command, driveHealthchecks, type Engine, engineProblem, openEngine, startApiService } from "./engine.ts";
import { buildProjectImage, ensureBaseImages, images, repoRoot } from "./images.ts";

export const PROJECT = "roz-image-test";

/** Where the engine keeps its state and the base images between runs (under the data dir, which git ignores). */
export const engineDir = (): string => process.env["ROZ_IMAGE_TEST_DIR"] ?? join(repoRoot, "data", "image-test");

export type Log = (line: string) => void;

/** Makes the base images (unless the engine's folder has them already) and the project's image. */
export async function prepareImages(log: Log): Promise<Engine> {
  const problem = await engineProblem();
  if (problem !== undefined) throw new Error(problem);
  const engine = openEngine(engineDir());
  await ensureBaseImages(engine, log);
  await buildProjectImage(engine, log);
  return engine;
}

/**
 * The README's first-run commands (`docker compose …` lines of the Deployment section), as
 * argument lists for docker-compose: the key's `run` first, then `up -d`.
 */
export function readmeComposeCommands(): string[][] {
  const readme = readFileSync(join(repoRoot, "README.md"), "utf8");
  return [...readme.matchAll(/^docker compose (.+?)(?:\s+#.*)?$/gm)].map((m) => m[1]!.trim().split(/\s+/));
}

export interface Topology {
  /** HAProxy's published port on the host: `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Runs docker-compose on the project, resolves with its stdout. */
  compose(args: readonly string[]): Promise<string>;
  /** The container of a compose service (its id). */
  container(service: string): Promise<string>;
  /** `compose down --volumes`, then stops the API service and the health checks. */
  close(): Promise<void>;
}

export async function startTopology(engine: Engine, port: number, log: Log): Promise<Topology> {
  const api = await startApiService(engine);
  const health = driveHealthchecks(engine, 2_000);
  const env = {
    ...engine.env,
    DOCKER_HOST: api.dockerHost,
    COMPOSE_PROJECT_NAME: PROJECT,
    ROZ_IMAGE: images.roz,
    ROZ_POSTGRES_IMAGE: images.postgres,
    ROZ_NATS_IMAGE: images.nats,
    ROZ_HAPROXY_IMAGE: images.haproxy,
    ROZ_HTTP_PORT: String(port),
  };
  const compose = (args: readonly string[]): Promise<string> =>
    command("docker-compose", ["-f", join(repoRoot, "docker-compose.yml"), ...args], { env, cwd: repoRoot });
  const down = (): Promise<string> => compose(["down", "--volumes", "--remove-orphans", "--timeout", "10"]);
  // What a run that died left behind.
  await down().catch(() => undefined);
  return {
    url: `http://127.0.0.1:${port}`,
    compose,
    async container(service) {
      const id = (await compose(["ps", "-q", service])).trim();
      if (id === "") throw new Error(`no container for ${service}`);
      return id;
    },
    async close() {
      try {
        log((await down().catch((err: Error) => err.message)).trim() || "compose down");
      } finally {
        health.stop();
        await api.stop();
      }
    },
  };
}
