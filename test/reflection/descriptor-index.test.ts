// The reflection index and session in-process, on real generated and well-known descriptors:
// extensions (which roz.v1 does not use) and the choice between commented and plain descriptors.
import { clone, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, file_google_protobuf_cpp_features, file_google_protobuf_java_features } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { file_roz_v1_agent } from "../../src/gen/roz/v1/agent_pb.js";
import { createDescriptorIndex } from "../../src/rpc/reflection/descriptor-index.ts";
import { createReflectionSession } from "../../src/rpc/reflection/reflection-session.ts";
import { generatedSourceInfo } from "../../src/rpc/reflection/source-info.ts";

const featureFiles = [file_google_protobuf_cpp_features, file_google_protobuf_java_features];

describe("extensions", () => {
  const index = createDescriptorIndex(featureFiles, [], []);

  it("finds the file declaring an extension by extended type and number", () => {
    expect(index.fileByExtension("google.protobuf.FeatureSet", 1000)?.name).toBe("google/protobuf/cpp_features.proto");
    expect(index.fileByExtension("google.protobuf.FeatureSet", 1001)?.name).toBe("google/protobuf/java_features.proto");
    expect(index.fileByExtension("google.protobuf.FeatureSet", 4242)).toBeUndefined();
    expect(index.fileBySymbol("pb.cpp")?.name).toBe("google/protobuf/cpp_features.proto");
  });

  it("lists extension numbers of known types only", () => {
    expect([...index.extensionNumbers("google.protobuf.FeatureSet")!].sort()).toEqual([1000, 1001]);
    // descriptor.proto is indexed as an import; FileOptions has no extensions here.
    expect(index.extensionNumbers("google.protobuf.FileOptions")).toEqual([]);
    expect(index.extensionNumbers("google.protobuf.Nope")).toBeUndefined();
  });

  it("answers file_containing_extension with the file and its imports", () => {
    const answer = createReflectionSession(index).answer({
      case: "fileContainingExtension",
      value: { containingType: "google.protobuf.FeatureSet", extensionNumber: 1001 },
    });
    expect(answer.case).toBe("fileDescriptorResponse");
    const names = answer.case === "fileDescriptorResponse" ? answer.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b).name) : [];
    expect(names).toEqual(["google/protobuf/java_features.proto", "google/protobuf/descriptor.proto"]);
  });

  it("answers a request without message_request with INVALID_ARGUMENT", () => {
    expect(createReflectionSession(index).answer({ case: undefined })).toMatchObject({
      case: "errorResponse",
      value: { errorCode: 3 },
    });
  });
});

describe("commented descriptors", () => {
  const agentBytes = (sourceInfo: Parameters<typeof createDescriptorIndex>[2]) =>
    fromBinary(FileDescriptorProtoSchema, createDescriptorIndex([file_roz_v1_agent], [], sourceInfo).fileByName("roz/v1/agent.proto")!.bytes);

  it("serves the generated set with comments when it matches the compiled schema", () => {
    const served = agentBytes(generatedSourceInfo());
    expect(served.sourceCodeInfo?.location.length).toBeGreaterThan(0);
  });

  it("falls back to the plain compiled descriptor when the commented one differs", () => {
    const stale = generatedSourceInfo().map((file) => clone(FileDescriptorProtoSchema, file));
    const first = stale.find((file) => file.name === "roz/v1/agent.proto")!.messageType[0]!;
    const original = first.name;
    first.name = "Renamed";
    const served = agentBytes(stale);
    expect(served.sourceCodeInfo).toBeUndefined();
    expect(served.messageType[0]!.name).toBe(original);
    expect(agentBytes([]).sourceCodeInfo).toBeUndefined();
  });
});
