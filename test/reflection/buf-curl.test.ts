// `buf curl` (the real CLI from @bufbuild/buf) resolving roz.v1 through our reflection service,
// once per reflection protocol, over gRPC on cleartext HTTP/2.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bufCurl as bufCurlGrpc } from "../support/buf-curl.ts";
import { startReflectionServer, stubEventTime, type ReflectionTestServer } from "./reflection-server.ts";

let server: ReflectionTestServer;
beforeAll(async () => {
  server = await startReflectionServer();
});
afterAll(async () => {
  await server?.close();
});

describe.each(["grpc-v1", "grpc-v1alpha"])("buf curl --reflect-protocol %s", (protocol) => {
  const bufCurl = (...args: string[]): Promise<string> => bufCurlGrpc(["--reflect-protocol", protocol, ...args], 20_000);

  it("lists services and methods", async () => {
    const services = (await bufCurl("--list-services", server.url)).trim().split("\n");
    expect(services).toContain("roz.v1.AgentService");
    expect(services).toContain("grpc.reflection.v1.ServerReflection");
    expect(services).toContain("grpc.reflection.v1alpha.ServerReflection");

    const methods = (await bufCurl("--list-methods", server.url)).trim().split("\n");
    expect(methods).toContain("roz.v1.AgentService/StreamSession");
    expect(methods).toContain("roz.v1.AgentService/WatchTeam");
  });

  it("calls WatchTeam with a schema taken from reflection (Timestamp import included)", async () => {
    const stdout = await bufCurl("-d", '{"taskId":"t1"}', `${server.url}/roz.v1.AgentService/WatchTeam`);
    expect(JSON.parse(stdout)).toEqual({
      workerStarted: { workerId: "w-t1", hostId: "h1" },
      seq: "1",
      time: stubEventTime.toISOString().replace(".000Z", "Z"),
    });
  });

  it("rejects a method the reflected schema does not have", async () => {
    await expect(bufCurl("-d", "{}", `${server.url}/roz.v1.AgentService/Nope`)).rejects.toMatchObject({ stderr: expect.stringContaining("no such method") });
  });
});
