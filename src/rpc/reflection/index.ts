/**
 * gRPC server reflection (`grpc.reflection.v1` and `grpc.reflection.v1alpha`) for a Connect
 * router, so grpcurl, `buf curl --reflect` and grpc-js reflection clients can discover
 * roz.v1.AgentService. Connect has no built-in reflection (connect-es issue 507).
 */
import type { DescService } from "@bufbuild/protobuf";
import type { FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import { ServerReflection as ServerReflectionV1, file_grpc_reflection_v1_reflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1Alpha, file_grpc_reflection_v1alpha_reflection } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { createDescriptorIndex } from "./descriptor-index.ts";
import { reflectionInfoHandler } from "./reflection-service.ts";
import { generatedSourceInfo } from "./source-info.ts";

export { ServerReflectionV1, ServerReflectionV1Alpha };

/** Options of createReflectionServices / registerReflection. */
export interface ReflectionOptions {
  /**
   * Descriptors carrying comments (`source_code_info`) to serve in place of the comment-free
   * ones compiled into generated code, matched by file name and used only where they describe
   * the same schema. Default: our own protos' set written by `npm run generate`
   * (src/gen/source_info_pb.js). Pass `[]` to serve plain descriptors.
   */
  readonly sourceInfo?: readonly FileDescriptorProto[];
}

/** Implementations of both reflection services, ready for `router.service()`. */
export interface ReflectionServices {
  readonly v1: ServiceImpl<typeof ServerReflectionV1>;
  readonly v1alpha: ServiceImpl<typeof ServerReflectionV1Alpha>;
}

/**
 * Builds reflection over `services`: ListServices returns their names followed by the two
 * reflection services (as grpc servers do); file and symbol lookups cover the files declaring
 * them and all their transitive imports (well-known types included) plus the reflection protos.
 * Descriptors are indexed and serialized here, once.
 */
export function createReflectionServices(services: readonly DescService[], options: ReflectionOptions = {}): ReflectionServices {
  const reflection = [ServerReflectionV1, ServerReflectionV1Alpha];
  const index = createDescriptorIndex(
    [...services.map((service) => service.file), file_grpc_reflection_v1_reflection, file_grpc_reflection_v1alpha_reflection],
    [...services, ...reflection].map((service) => service.typeName),
    options.sourceInfo ?? generatedSourceInfo(),
  );
  return {
    v1: { serverReflectionInfo: reflectionInfoHandler(index) },
    v1alpha: { serverReflectionInfo: reflectionInfoHandler(index) },
  };
}

/**
 * Registers `grpc.reflection.v1.ServerReflection` and `grpc.reflection.v1alpha.ServerReflection`
 * on `router`, describing `services` (pass the services registered on the same router).
 * Reflection is a bidi stream, so it works over gRPC on HTTP/2 (and Connect on HTTP/2), not
 * over HTTP/1.1 or gRPC-Web.
 */
export function registerReflection(router: ConnectRouter, services: readonly DescService[], options?: ReflectionOptions): void {
  const impl = createReflectionServices(services, options);
  router.service(ServerReflectionV1, impl.v1);
  router.service(ServerReflectionV1Alpha, impl.v1alpha);
}
