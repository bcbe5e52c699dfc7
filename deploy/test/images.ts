/**
 * The images of the image test. No registry can be reached from here, so the base images are
 * made locally under the exact names the Dockerfile and the compose file use (Debian bookworm
 * from debootstrap, Node from the `node` npm package, the services from Debian's packages), then
 * the project's image is built from the repository's Dockerfile, unchanged, with `--pull=never`.
 * Base images carry a label with a hash of their recipe: a run reuses them while it matches.
 */
import { createHash } from "node:crypto";
import { cpSync, globSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { withBasesLock } from "./bases-lock.ts";
import { command, type Engine } from "./engine.ts";

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url));
const recipes = fileURLToPath(new URL("images/", import.meta.url));
const RECIPE_LABEL = "org.roz.image-test.recipe";

/** The Node version of the Dockerfile's stages: the `node` dev dependency's. */
const nodeVersion = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { devDependencies: Record<string, string> }).devDependencies["node"]!;

/**
 * Debian ships PostgreSQL 15 and nats-server 2.9 where the compose file names postgres:16 and
 * nats:2.10-alpine: those two get names of their own, handed to compose through its
 * ROZ_POSTGRES_IMAGE and ROZ_NATS_IMAGE variables. Debian's HAProxy is the compose file's 2.6.
 */
export const images = {
  debian: "docker.io/library/debian:bookworm-slim",
  node: `docker.io/library/node:${nodeVersion}-bookworm-slim`,
  postgres: "localhost/roz-image-test/postgres:15",
  nats: "localhost/roz-image-test/nats:2.9",
  haproxy: "docker.io/library/haproxy:2.6",
  roz: "localhost/roz:image-test",
} as const;

type Log = (line: string) => void;

/** What every base image is made from: these recipes, this file, the Node binary's version and npm's. */
async function recipeKey(npmDir: string): Promise<string> {
  const hash = createHash("sha256");
  for (const file of [fileURLToPath(import.meta.url), ...globSync(join(recipes, "*")).sort()]) hash.update(readFileSync(file));
  hash.update(nodeVersion).update(readFileSync(join(npmDir, "package.json")));
  return hash.digest("hex").slice(0, 16);
}

async function labelOf(engine: Engine, image: string): Promise<string | undefined> {
  const out = await engine.podman(["image", "inspect", image, "--format", `{{index .Labels "${RECIPE_LABEL}"}}`]).catch(() => undefined);
  return out?.trim();
}

/** Debian bookworm's minimal root from the package archive, trimmed like Debian's slim images. */
async function buildDebian(engine: Engine, key: string, log: Log): Promise<void> {
  const root = join(engine.dir, "rootfs");
  rmSync(root, { recursive: true, force: true });
  await command("debootstrap", ["--variant=minbase", "bookworm", root, "http://deb.debian.org/debian"]);
  cpSync(join(recipes, "dpkg-slim.cfg"), join(root, "etc/dpkg/dpkg.cfg.d/slim"));
  cpSync(join(recipes, "apt-slim.conf"), join(root, "etc/apt/apt.conf.d/slim"));
  for (const dir of ["var/cache/apt", "var/lib/apt/lists", "usr/share/man", "usr/share/locale", "usr/share/info", "tmp"])
    for (const entry of globSync(join(root, dir, "*"))) rmSync(entry, { recursive: true, force: true });
  await command("sh", ["-c", 'find "$1/usr/share/doc" -mindepth 1 ! -name copyright ! -type d -delete', "sh", root]);
  await command(
    "sh",
    ["-c", 'tar -C "$1" -c . | podman import --change "CMD [\\"bash\\"]" --change "LABEL $2" - "$3"', "sh", root, `${RECIPE_LABEL}=${key}`, images.debian],
    { env: engine.env },
  );
  rmSync(root, { recursive: true, force: true });
  log(`${images.debian}: debootstrap --variant=minbase bookworm, imported`);
}

/**
 * `podman build` as the test builds every image: Docker format (podman drops HEALTHCHECK from
 * OCI images), never pulling, and the host's network for `RUN` (apt and npm reach their
 * registries the way the host does, with no NAT in between).
 */
export function build(engine: Engine, args: readonly string[], log?: Log): Promise<string> {
  return command("podman", ["build", "--format", "docker", "--pull=never", "--network", "host", ...args], { env: engine.env, log });
}

async function buildNode(engine: Engine, key: string, npmDir: string, log: Log): Promise<void> {
  const context = join(engine.dir, "node-context");
  rmSync(context, { recursive: true, force: true });
  mkdirSync(context, { recursive: true });
  cpSync(join(repoRoot, "node_modules/node/bin/node"), join(context, "node"));
  cpSync(npmDir, join(context, "npm"), { recursive: true });
  cpSync(process.env["NODE_EXTRA_CA_CERTS"] ?? "/etc/ssl/certs/ca-certificates.crt", join(context, "ca-certificates.crt"));
  const args = ["--build-arg", `DEBIAN_IMAGE=${images.debian}`, "--label", `${RECIPE_LABEL}=${key}`];
  await build(engine, [...args, "-f", join(recipes, "node.Containerfile"), "-t", images.node, context]);
  rmSync(context, { recursive: true, force: true });
  log(`${images.node}: Debian + node ${nodeVersion} + npm`);
}

async function buildService(engine: Engine, key: string, service: "postgres" | "nats" | "haproxy", log: Log): Promise<void> {
  const args = ["--build-arg", `DEBIAN_IMAGE=${images.debian}`, "--label", `${RECIPE_LABEL}=${key}`, "--target", service];
  await build(engine, [...args, "-f", join(recipes, "services.Containerfile"), "-t", images[service], recipes]);
  log(`${images[service]}: Debian's package`);
}

/** Makes each base image that is missing or was made from another recipe (one maker at a time). */
export function ensureBaseImages(engine: Engine, log: Log): Promise<void> {
  return withBasesLock(engine.dir, () => makeBaseImages(engine, log), log);
}

async function makeBaseImages(engine: Engine, log: Log): Promise<void> {
  // npm as installed on this machine (the `node` package ships no npm), found from its command.
  const npmDir = dirname(dirname((await command("sh", ["-c", 'readlink -f "$(command -v npm)"'])).trim()));
  const key = await recipeKey(npmDir);
  const stale = async (image: string): Promise<boolean> => (await labelOf(engine, image)) !== key;
  if (await stale(images.debian)) await buildDebian(engine, key, log);
  // Each is built on Debian alone: side by side, they wait on the network together.
  await Promise.all([
    (async () => (await stale(images.node)) && (await buildNode(engine, key, npmDir, log)))(),
    ...(["postgres", "nats", "haproxy"] as const).map(async (service) => (await stale(images[service])) && (await buildService(engine, key, service, log))),
  ]);
}

/** The project's image from the repository's Dockerfile. */
export async function buildProjectImage(engine: Engine, log: Log): Promise<void> {
  // --jobs 2: the final stage's `npm ci` runs beside the console stage's.
  await build(engine, ["--jobs", "2", "-t", images.roz, repoRoot]);
  log(`${images.roz}: built from Dockerfile`);
}
