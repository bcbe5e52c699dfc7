// docker-compose.yml and deploy/haproxy.cfg run for real in the image tier (test/image/). What
// can be checked without a container engine is checked here: every variable the nodes get is a
// setting roz knows, HAProxy's server lines name the compose services on the nodes' port, and
// HAProxy accepts the file.
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { loadConfig, settings } from "../../src/app/config.ts";
import { repoRoot } from "../support/server.ts";

const compose = parse(readFileSync(join(repoRoot, "docker-compose.yml"), "utf8"), { merge: true }) as {
  services: Record<string, { environment?: Record<string, string>; image?: string; command?: string[] }>;
};
const haproxyCfg = readFileSync(join(repoRoot, "deploy", "haproxy.cfg"), "utf8");
const nodes = Object.entries(compose.services).filter(([, s]) => s.environment?.["NATS_URL"] !== undefined);
const known = new Set(Object.values(settings).map((s) => s.env));

describe("docker-compose.yml cluster", () => {
  it("runs two roz nodes on PostgreSQL and NATS with distinct node ids and valid settings", () => {
    expect(nodes.map(([name]) => name)).toEqual(["roz1", "roz2"]);
    const ids = new Set<string>();
    for (const [name, service] of nodes) {
      const env = service.environment!;
      for (const variable of Object.keys(env)) expect(known.has(variable), `${name}: ${variable} is not a roz setting`).toBe(true);
      const config = loadConfig(env);
      expect(config.databaseUrl).toMatch(/^postgres:\/\/.+@postgres:5432\//);
      expect(config.natsUrl).toBe("nats://nats:4222");
      ids.add(config.nodeId!);
    }
    expect(ids.size).toBe(nodes.length);
    expect(compose.services["nats"]?.command).toContain("-js");
  });

  it("HAProxy balances over exactly those nodes on their port, h2c, health-checked on /readyz", () => {
    const servers = [...haproxyCfg.matchAll(/^\s*server\s+(\S+)\s+([^:\s]+):(\d+)/gm)].map((m) => ({ name: m[1], host: m[2], port: Number(m[3]) }));
    expect(servers.map((s) => s.host)).toEqual(nodes.map(([name]) => name));
    for (const s of servers) expect(s.port).toBe(loadConfig(compose.services[s.host!]!.environment).port);
    expect(haproxyCfg).toMatch(/default-server .*check.*proto h2/);
    expect(haproxyCfg).toMatch(/http-check send meth GET uri \/readyz ver HTTP\/1.1 hdr host/);
  });

  it.runIf(process.env.CI === "true" || existsSync("/usr/sbin/haproxy"))("HAProxy accepts deploy/haproxy.cfg", async () => {
    // -c parses and checks; the compose host names do not resolve here, which is only a warning.
    const { stdout, stderr } = await promisify(execFile)("haproxy", ["-c", "-f", join(repoRoot, "deploy", "haproxy.cfg")]);
    expect(`${stdout}${stderr}`).toContain("Configuration file is valid");
  });
});
