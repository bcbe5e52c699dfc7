import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";

export type ReflectionVersion = "v1" | "v1alpha";

/** A reflection request as @grpc/proto-loader (keepCase) takes it. */
export type RawRequest = { host?: string } & (
  | { file_by_filename: string }
  | { file_containing_symbol: string }
  | { file_containing_extension: { containing_type: string; extension_number: number } }
  | { all_extension_numbers_of_type: string }
  | { list_services: string }
);

/** A reflection response as @grpc/proto-loader decodes it (keepCase, oneofs, defaults). */
export interface RawResponse {
  valid_host: string;
  original_request: Record<string, unknown>;
  message_response: string;
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  all_extension_numbers_response?: { base_type_name: string; extension_number: number[] };
  list_services_response?: { service: { name: string }[] };
  error_response?: { error_code: number; error_message: string };
}

/** One ServerReflectionInfo stream from a real @grpc/grpc-js client. */
export interface ReflectionStream {
  /** Sends one request and resolves with the next response. Call sequentially. */
  ask(request: RawRequest): Promise<RawResponse>;
  /** Sends all requests at once, then collects as many responses. */
  askAll(requests: readonly RawRequest[]): Promise<RawResponse[]>;
  close(): void;
}

type ReflectionClient = grpc.Client & {
  ServerReflectionInfo(): grpc.ClientDuplexStream<RawRequest, RawResponse>;
};

/** A grpc-js client for `grpc.reflection.<version>.ServerReflection` on `port` (h2c). */
export function createReflectionClient(port: number, version: ReflectionVersion) {
  const protoPath = fileURLToPath(new URL(`../../proto/grpc/reflection/${version}/reflection.proto`, import.meta.url));
  const definition = protoLoader.loadSync(protoPath, {
    keepCase: true,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    grpc: { reflection: Record<ReflectionVersion, { ServerReflection: grpc.ServiceClientConstructor }> };
  };
  const Client = loaded.grpc.reflection[version].ServerReflection;
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as ReflectionClient;

  return {
    open(): ReflectionStream {
      const call = client.ServerReflectionInfo();
      // close() cancels the call, which emits CANCELLED as an "error": not a failure here.
      call.on("error", () => {});
      const askAll = (requests: readonly RawRequest[]) =>
        new Promise<RawResponse[]>((resolve, reject) => {
          const out: RawResponse[] = [];
          const done = (error?: Error): void => {
            call.off("data", onData).off("error", done).off("end", onEnd);
            if (error !== undefined) reject(error);
            else resolve(out);
          };
          const onData = (response: RawResponse): void => {
            out.push(response);
            if (out.length === requests.length) done();
          };
          const onEnd = (): void => done(new Error(`stream ended after ${out.length} responses`));
          call.on("data", onData).on("error", done).on("end", onEnd);
          requests.forEach((request) => call.write(request));
        });
      return {
        askAll,
        ask: async (request) => (await askAll([request]))[0]!,
        close: () => call.cancel(),
      };
    },
    close: () => client.close(),
  };
}

/** Decodes the `FileDescriptorProto`s of a file_descriptor_response. */
export function decodeFiles(response: RawResponse): FileDescriptorProto[] {
  const files = response.file_descriptor_response?.file_descriptor_proto;
  if (files === undefined) {
    throw new Error(`expected file_descriptor_response, got ${JSON.stringify(response)}`);
  }
  return files.map((bytes) => fromBinary(FileDescriptorProtoSchema, new Uint8Array(bytes)));
}

/** The names of the files in a file_descriptor_response, in order. */
export function fileNames(response: RawResponse): string[] {
  return decodeFiles(response).map((file) => file.name);
}
