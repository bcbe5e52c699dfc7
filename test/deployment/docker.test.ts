// The container image and the compose file, tested without a container engine (the image
// tier, test/image/, builds and runs them on podman): the Dockerfile's commands run as the
// image would run them, and the compose file says what a first run needs.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, type TestContext } from "vitest";
import { parse as parseYaml } from "yaml";
import { loadConfig, unknownVariableWarnings } from "../../src/app/config.ts";
import { repoRoot, runCli, serverNodeFlags, spawnServer } from "../support/server.ts";
import { createSelfSignedCert } from "../support/tls.ts";

const read = (file: string): string => readFileSync(join(repoRoot, file), "utf8");

/** The instructions of a Dockerfile: `FROM`, `ENV` (merged) and the exec-form commands. */
function parseDockerfile(text: string) {
  const lines = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));
  const instruction = (name: string): string[] => lines.filter((l) => l.toUpperCase().startsWith(`${name} `)).map((l) => l.slice(name.length + 1).trim());
  const env = Object.fromEntries(instruction("ENV").flatMap((l) => [...l.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])));
  const execForm = (value: string | undefined): string[] => JSON.parse(value ?? "null") as string[];
  const healthcheck = instruction("HEALTHCHECK")[0] ?? "";
  return {
    from: instruction("FROM"),
    env: env as Record<string, string>,
    entrypoint: execForm(instruction("ENTRYPOINT")[0]),
    cmd: execForm(instruction("CMD")[0]),
    healthcheck: execForm(/CMD\s+(\[.*\])$/.exec(healthcheck)?.[1]),
  };
}

const dockerfile = parseDockerfile(read("Dockerfile"));
const packageJson = JSON.parse(read("package.json")) as { devDependencies: Record<string, string> };

/** The image's argv for `docker run IMAGE ...args`, with the image's `node` as the test's Node. */
const imageArgs = (...args: string[]): string[] => {
  expect(dockerfile.entrypoint.slice(0, 2 + serverNodeFlags.length)).toEqual(["node", ...serverNodeFlags, "src/main.ts"]);
  return [...dockerfile.entrypoint.slice(2 + serverNodeFlags.length), ...args];
};

async function tempDir(onTestFinished: TestContext["onTestFinished"]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "roz-volume-"));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe("Dockerfile", () => {
  it("pins the Node image of every stage to the node dev dependency's version", () => {
    const image = `node:${packageJson.devDependencies["node"]}-bookworm-slim`;
    // The console is built in a stage of its own (dev dependencies), then copied into the image.
    expect(dockerfile.from).toEqual([`${image} AS console`, image]);
    expect(read("Dockerfile")).toMatch(/^COPY --from=console \/app\/web\/dist \.\/web\/dist$/m);
  });

  it("is the roz command: sub-commands run with `docker run IMAGE keys …`, the healthcheck is `roz healthcheck`", () => {
    // Node's flags are those of `npm start`.
    expect(dockerfile.entrypoint).toEqual(["node", ...serverNodeFlags, "src/main.ts"]);
    expect(dockerfile.cmd).toEqual([]);
    expect(dockerfile.healthcheck).toEqual(["node", "src/main.ts", "healthcheck"]);
  });

  it("first run: refuses without a key, `keys create` on the same volume, then serves and is healthy", async ({ onTestFinished }) => {
    // The image's environment; the volume is a temporary folder and the port a free one.
    const volume = { ...dockerfile.env, ROZ_DATA_DIR: await tempDir(onTestFinished), ROZ_PORT: "0", ROZ_AUTH: "required" };
    expect(dockerfile.env["ROZ_HOST"]).toBe("0.0.0.0");

    const refused = await runCli(imageArgs(), volume);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('create one first with "roz keys create --tenant NAME"');

    const created = await runCli(imageArgs("keys", "create", "--tenant", "acme"), volume);
    expect(created.code, created.stderr).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^roz_sk_[\w-]{43}$/);

    const server = await spawnServer(volume);
    onTestFinished(() => server.dispose());
    expect(server.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/);
    const local = `http://127.0.0.1:${server.port}`;
    expect((await fetch(`${local}/v1/sessions`)).status).toBe(401);
    expect((await fetch(`${local}/v1/sessions`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);

    const healthy = await runCli(dockerfile.healthcheck.slice(2), { ...volume, ROZ_PORT: String(server.port) });
    expect(healthy.code, healthy.stderr).toBe(0);

    await server.stop();
    const unhealthy = await runCli(dockerfile.healthcheck.slice(2), { ...volume, ROZ_PORT: String(server.port) });
    expect(unhealthy.code).toBe(1);
    expect(unhealthy.stderr.trim()).toBe(`roz healthcheck: http://127.0.0.1:${server.port}/healthz: ECONNREFUSED`);
  });

  it("the healthcheck follows TLS: it speaks https when ROZ_TLS_CERT is set", async ({ onTestFinished }) => {
    const cert = await createSelfSignedCert();
    onTestFinished(() => cert.cleanup());
    const tls = { ROZ_TLS_CERT: cert.certPath, ROZ_TLS_KEY: cert.keyPath };
    const server = await spawnServer(tls);
    onTestFinished(() => server.dispose());
    const probe = (env: Record<string, string>) => runCli(["healthcheck"], { ROZ_PORT: String(server.port), ...env });

    const overTls = await probe(tls);
    expect(overTls.code, overTls.stderr).toBe(0);
    // Cleartext against the TLS port gets no HTTP answer: the probe must not pass by accident.
    const cleartext = await probe({});
    expect(cleartext.code).toBe(1);
    expect(cleartext.stderr).toContain(`roz healthcheck: http://127.0.0.1:${server.port}/healthz:`);
  });
});

describe("docker-compose.yml", () => {
  type Service = {
    build?: string;
    image?: string;
    environment?: Record<string, string>;
    volumes?: string[];
    depends_on?: Record<string, { condition: string }>;
    healthcheck?: { test: string[] };
    command?: unknown;
  };
  // The nodes share their settings through YAML merge keys (`<<: *roz-node`).
  const compose = parseYaml(read("docker-compose.yml"), { merge: true }) as { services: Record<string, Service>; volumes: Record<string, unknown> };
  const roz = compose.services["roz1"] as Service;

  it("builds the roz nodes from this Dockerfile and starts them after PostgreSQL and NATS are healthy", () => {
    expect(roz.build).toBe(".");
    expect(roz.command).toBeUndefined(); // the image's entrypoint: `run --rm roz1 keys …` works
    expect(roz.depends_on).toEqual({ postgres: { condition: "service_healthy" }, nats: { condition: "service_healthy" } });
    expect(compose.services["postgres"]?.healthcheck?.test.join(" ")).toContain("pg_isready");
  });

  it("sets only settings roz knows, with valid values", () => {
    const env = roz.environment ?? {};
    expect(unknownVariableWarnings(env)).toEqual([]);
    const config = loadConfig(env);
    expect(config.databaseUrl).toBe("postgres://roz:roz@postgres:5432/roz");
    expect(config.host).toBe("0.0.0.0");
  });

  it("the README documents the first run: `docker compose run --rm roz1 keys create` before `up`", () => {
    const readme = read("README.md");
    const create = readme.indexOf("docker compose run --rm roz1 keys create --tenant");
    const up = readme.indexOf("docker compose up");
    expect(create).toBeGreaterThan(-1);
    expect(up).toBeGreaterThan(create);
  });
});
