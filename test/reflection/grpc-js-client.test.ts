// gRPC server reflection v1 and v1alpha, driven by a real @grpc/grpc-js client over h2c.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createReflectionClient, decodeFiles, fileNames, type RawResponse, type ReflectionStream, type ReflectionVersion } from "./grpc-reflection-client.ts";
import { startReflectionServer, type ReflectionTestServer } from "./reflection-server.ts";

const agentFile = "roz/v1/agent.proto";
const structFile = "google/protobuf/struct.proto";
const timestampFile = "google/protobuf/timestamp.proto";
const NOT_FOUND = 5;

let server: ReflectionTestServer;
beforeAll(async () => {
  server = await startReflectionServer();
});
afterAll(async () => {
  await server?.close();
});

function expectNotFound(response: RawResponse, text: string): void {
  expect(response.message_response).toBe("error_response");
  expect(response.error_response?.error_code).toBe(NOT_FOUND);
  expect(response.error_response?.error_message).toContain(text);
}

describe.each<ReflectionVersion>(["v1", "v1alpha"])("grpc.reflection.%s", (version) => {
  let client: ReturnType<typeof createReflectionClient>;
  const streams: ReflectionStream[] = [];
  const open = (): ReflectionStream => {
    const stream = client.open();
    streams.push(stream);
    return stream;
  };
  /** One request on a fresh stream, so nothing counts as already sent. */
  const askFresh = (request: Parameters<ReflectionStream["ask"]>[0]) => open().ask(request);

  beforeAll(() => {
    client = createReflectionClient(server.port, version);
  });
  afterAll(() => {
    streams.forEach((stream) => stream.close());
    client.close();
  });

  it("lists the registered services plus both reflection services, echoing host and request", async () => {
    const response = await askFresh({ host: "example.test", list_services: "*" });
    expect(response.valid_host).toBe("example.test");
    expect(response.original_request).toMatchObject({ host: "example.test", list_services: "*" });
    expect(response.list_services_response?.service.map((s) => s.name)).toEqual([
      "roz.v1.AgentService",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
    ]);
  });

  it("returns agent.proto with its imports for the service, with comments", async () => {
    const response = await askFresh({ file_containing_symbol: "roz.v1.AgentService" });
    const [agent, ...deps] = decodeFiles(response);
    expect(agent!.name).toBe(agentFile);
    expect(deps.map((file) => file.name).sort()).toEqual([structFile, timestampFile]);
    expect(agent!.dependency).toEqual([structFile, timestampFile]);
    const service = agent!.service.find((s) => s.name === "AgentService");
    expect(service?.method.map((m) => [m.name, m.clientStreaming, m.serverStreaming])).toEqual([
      ["StreamSession", true, true],
      ["WatchTeam", false, true],
      ["AttachSession", false, true],
      ["SendToSession", false, false],
    ]);
    const comments = agent!.sourceCodeInfo?.location.map((l) => l.leadingComments) ?? [];
    expect(comments).toContain(" The agent-session service.\n");
    // The Struct import is the real well-known type, not a placeholder.
    expect(deps.find((f) => f.name === structFile)?.messageType.map((m) => m.name)).toContain("Struct");
  });

  it.each([
    ["roz.v1.SessionRequest", agentFile],
    ["roz.v1.AgentService.StreamSession", agentFile],
    ["roz.v1.AgentService.WatchTeam", agentFile],
    ["roz.v1.TelemetryUpdate.SensorReadingsEntry", agentFile],
    ["roz.v1.SessionRequest.start", agentFile],
    ["roz.v1.AgentPlacement", agentFile],
    ["roz.v1.AGENT_PLACEMENT_CLOUD", agentFile],
    // Upstream's session event envelope (SessionResponse field 19) and the approval modifier.
    ["roz.v1.SessionEventEnvelope", agentFile],
    ["roz.v1.SessionEventEnvelope.model_call_completed", agentFile],
    ["roz.v1.ModelCallCompletedPayload", agentFile],
    ["roz.v1.SessionResponse.session_event", agentFile],
    ["roz.v1.PermissionDecision.modifier", agentFile],
    ["google.protobuf.Struct", structFile],
    ["google.protobuf.Timestamp", timestampFile],
    ["grpc.reflection.v1alpha.ServerReflection", "grpc/reflection/v1alpha/reflection.proto"],
  ])("finds the file containing %s", async (symbol, file) => {
    const response = await askFresh({ file_containing_symbol: symbol });
    expect(fileNames(response)[0]).toBe(file);
  });

  it("returns only struct.proto for google.protobuf.Struct (it imports nothing)", async () => {
    const response = await askFresh({ file_containing_symbol: "google.protobuf.Struct" });
    expect(fileNames(response)).toEqual([structFile]);
  });

  it("returns a file by name with its transitive imports", async () => {
    const response = await askFresh({ file_by_filename: agentFile });
    expect(fileNames(response)).toEqual([agentFile, structFile, timestampFile]);
  });

  it("does not resend files already sent on the same stream, but always sends the requested one", async () => {
    const stream = open();
    expect(fileNames(await stream.ask({ file_containing_symbol: "roz.v1.AgentService" }))).toEqual([agentFile, structFile, timestampFile]);
    expect(fileNames(await stream.ask({ file_containing_symbol: "google.protobuf.Struct" }))).toEqual([structFile]);
    expect(fileNames(await stream.ask({ file_by_filename: agentFile }))).toEqual([agentFile]);
    // A new stream starts with nothing sent.
    expect(fileNames(await open().ask({ file_by_filename: agentFile }))).toHaveLength(3);
  });

  it("answers pipelined requests one by one, in order", async () => {
    const responses = await open().askAll([
      { file_by_filename: timestampFile },
      { list_services: "" },
      { file_containing_symbol: "roz.v1.Nope" },
      { file_by_filename: agentFile },
    ]);
    expect(responses.map((r) => r.message_response)).toEqual([
      "file_descriptor_response",
      "list_services_response",
      "error_response",
      "file_descriptor_response",
    ]);
    expect(responses.map((r) => r.original_request)).toMatchObject([
      { file_by_filename: timestampFile },
      { list_services: "" },
      { file_containing_symbol: "roz.v1.Nope" },
      { file_by_filename: agentFile },
    ]);
    expect(fileNames(responses[3]!)).toEqual([agentFile, structFile]);
  });

  it("answers unknown symbols and files with an in-stream NOT_FOUND, keeping the stream open", async () => {
    const stream = open();
    expectNotFound(await stream.ask({ file_containing_symbol: "roz.v1.Nope" }), "roz.v1.Nope");
    expectNotFound(await stream.ask({ file_containing_symbol: "roz.v1.AgentService.Nope" }), "Nope");
    expectNotFound(await stream.ask({ file_by_filename: "nope/v1/nope.proto" }), "nope/v1/nope.proto");
    // File names carry the .proto suffix; the suffix-less DescFile.name is not a file name.
    expectNotFound(await stream.ask({ file_by_filename: "roz/v1/agent" }), "roz/v1/agent");
    const after = await stream.ask({ list_services: "" });
    expect(after.list_services_response?.service).toHaveLength(3);
  });

  it("answers extension queries: NOT_FOUND for unknown ones, no numbers for our types", async () => {
    const stream = open();
    expectNotFound(
      await stream.ask({
        file_containing_extension: { containing_type: "roz.v1.SessionRequest", extension_number: 1000 },
      }),
      "roz.v1.SessionRequest",
    );
    const numbers = await stream.ask({ all_extension_numbers_of_type: "roz.v1.SessionRequest" });
    expect(numbers.all_extension_numbers_response).toEqual({
      base_type_name: "roz.v1.SessionRequest",
      extension_number: [],
    });
    expectNotFound(await stream.ask({ all_extension_numbers_of_type: "roz.v1.Nope" }), "roz.v1.Nope");
  });
});
