// The image built from the repository's Dockerfile, and docker-compose.yml run with it for real:
// podman with runc, docker-compose 1.29 on podman's API, base images made here (deploy/test/).
// The README's first run, /readyz and a session with a tool call through HAProxy (grpc-js), a
// node killed with SIGKILL and the session re-attached with nothing lost, the image's
// HEALTHCHECK, SIGTERM to PID 1, and `compose down` leaving nothing. Skips with a notice where
// podman cannot run; under CI=true that is a failure.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { engineProblem } from "../../deploy/test/engine.ts";
import { images, repoRoot } from "../../deploy/test/images.ts";
import { PROJECT, prepareImages, readmeComposeCommands, startTopology, type Topology } from "../../deploy/test/topology.ts";
import { type Conversation, expectSameAsReplay, keep, reattach } from "../support/cluster.ts";
import { freePort } from "../support/nats.ts";
import { type SessionClientFactory, sessionClientFactory } from "../support/session-client.ts";
import { caseOf, readTurn, responseValue, rq, startSession, textOf, tool, turnCompleteOf } from "../support/session-protocol.ts";

const problem = await engineProblem();
if (problem !== undefined && process.env.CI === "true") throw new Error(`podman required in CI for the image test but unusable: ${problem}`);
if (problem !== undefined) console.warn(`[image] tests skipped: ${problem}`);

/** Files that apt, npm or a build left in the image (apt's lock files aside). */
const LEFTOVERS = "find /var/lib/apt/lists /var/cache/apt /root/.npm /root/.cache /tmp -type f ! -name lock 2>/dev/null; true";

const started = Date.now();
const log = (line: string): void => console.log(`[image] ${((Date.now() - started) / 1000).toFixed(0)}s ${line}`);

describe.skipIf(problem !== undefined)("the image and the compose topology, on podman", () => {
  let engine: Awaited<ReturnType<typeof prepareImages>>;
  let topology: Topology;
  let key: string;
  let factory: SessionClientFactory;
  let conversation: Conversation;
  /** The node that was not killed. */
  let survivor: string;

  beforeAll(async () => {
    engine = await prepareImages(log);
    topology = await startTopology(engine, await freePort(), log);
  }, 900_000);
  afterAll(async () => {
    factory?.close();
    await topology?.close();
  }, 120_000);

  const inImage = (script: string): Promise<string> => engine.podman(["run", "--rm", "--entrypoint", "sh", images.roz, "-c", script]);
  const podmanInspect = async (container: string, format: string): Promise<string> => (await engine.podman(["inspect", container, "--format", format])).trim();
  const exitOf = (service: string): Promise<string> => topology.container(service).then((id) => podmanInspect(id, "{{.State.Status}} {{.State.ExitCode}}"));

  it("the image carries no dev dependencies, apt lists or caches", async () => {
    const { devDependencies } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    const present = await inImage(`cd /app; for d in ${Object.keys(devDependencies).join(" ")}; do [ -e node_modules/$d ] && echo $d; done; true`);
    expect(present.trim()).toBe("");
    const leftovers = await engine.podman(["run", "--rm", "--user", "root", "--entrypoint", "sh", images.roz, "-c", LEFTOVERS]);
    expect(leftovers.trim()).toBe("");
    log(`image size ${(await engine.podman(["image", "inspect", images.roz, "--format", "{{.Size}}"])).trim()} bytes`);
  });

  it("the README's first run: `run --rm roz1 keys create`, then `up -d`; /readyz through HAProxy", { timeout: 300_000 }, async () => {
    const [run, up] = readmeComposeCommands();
    expect(run?.slice(0, 3)).toEqual(["run", "--rm", "roz1"]);
    expect(up).toEqual(["up", "-d"]);
    // -T: no terminal here (docker-compose 1.29 wants one for `run` otherwise).
    key = (await topology.compose(["run", "-T", ...run!.slice(1)])).trim();
    expect(key).toMatch(/^roz_sk_[\w-]{43}$/);
    await topology.compose(up!);
    await expect.poll(async () => (await fetch(`${topology.url}/readyz`).catch(() => undefined))?.status, { timeout: 120_000, interval: 500 }).toBe(200);
    expect((await fetch(`${topology.url}/v1/sessions`)).status).toBe(401);
    log("up, /readyz 200 through HAProxy");
  });

  it("a session with a tool call through HAProxy (grpc-js)", async () => {
    const authorized = sessionClientFactory("grpc-js", topology.url);
    factory = { kind: authorized.kind, open: () => authorized.open({ authorization: `Bearer ${key}` }), close: () => authorized.close() };
    const client = factory.open();
    const { sessionId } = await startSession(client, { model: "scripted/default", tools: [tool("read_file")] });
    const call = { responses: [[{ tool_call: { name: "read_file", id: "call-1", arguments: { path: "a" } } }], [{ text: "done" }]] };
    client.send(rq.user(`script: ${JSON.stringify(call)}`, { messageId: "m1" }));
    const request = await client.responses.nextMatching((r) => caseOf(r) === "toolRequest", 15_000);
    expect(responseValue(request, "toolRequest").toolName).toBe("read_file");
    client.send(rq.toolResult("call-1", "hi"));
    expect(turnCompleteOf(await readTurn(client)).stopReason).toBe("end_turn");
    conversation = { sessionId, client, seen: [] };
    keep(conversation, client.responses.seen);
  });

  it("SIGKILL of the node running the session: re-attached through HAProxy, nothing lost", { timeout: 180_000 }, async () => {
    const postgres = await topology.container("postgres");
    const owner = (
      await engine.podman(["exec", postgres, "psql", "-U", "roz", "-d", "roz", "-tAc", `SELECT node_id FROM sessions WHERE id = '${conversation.sessionId}'`])
    ).trim();
    expect(["roz1", "roz2"]).toContain(owner);
    survivor = owner === "roz1" ? "roz2" : "roz1";
    await engine.podman(["kill", "--signal", "KILL", await topology.container(owner)]);
    conversation.client.cancel();
    await reattach(factory, conversation);
    conversation.client.send(rq.user("after the kill", { messageId: "m2" }));
    const turn = await readTurn(conversation.client, 30_000);
    expect(textOf(turn)).toContain("You said: after the kill");
    keep(conversation, turn);
    conversation.client.cancel();
    await expectSameAsReplay(factory, conversation);
    log(`${owner} killed, session re-attached through HAProxy; ${owner} is now ${await exitOf(owner)}`);
  });

  it("the image's HEALTHCHECK: podman inspect says the surviving node is healthy", { timeout: 120_000 }, async () => {
    const id = await topology.container(survivor);
    await expect.poll(() => podmanInspect(id, "{{.State.Health.Status}}"), { timeout: 90_000, interval: 1000 }).toBe("healthy");
  });

  it("SIGTERM to the node as PID 1: it drains and exits 0, well within its grace", { timeout: 60_000 }, async () => {
    const began = Date.now();
    await topology.compose(["stop", survivor]);
    expect(Date.now() - began).toBeLessThan(15_000);
    expect(await exitOf(survivor)).toBe("exited 0");
  });

  it("`compose down` leaves nothing running", { timeout: 120_000 }, async () => {
    await topology.compose(["down", "--volumes", "--timeout", "10"]);
    expect((await engine.podman(["ps", "-a", "-q", "--filter", `label=com.docker.compose.project=${PROJECT}`])).trim()).toBe("");
    expect((await engine.podman(["volume", "ls", "-q"])).trim()).toBe("");
  });
});
