import { base64Decode } from "@bufbuild/protobuf/wire";
import { clone, equals, fromBinary, toBinary, type DescFile } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { sourceInfoDescriptorSet } from "../../gen/source_info_pb.js";

/**
 * The descriptors of our own proto files *with* comments, written by `npm run generate`
 * (see codegen/protoc-gen-source-info.ts). Decoded on each call, so nothing happens at import.
 */
export function generatedSourceInfo(): FileDescriptorProto[] {
  return fromBinary(FileDescriptorSetSchema, base64Decode(sourceInfoDescriptorSet)).file;
}

/**
 * The serialized `FileDescriptorProto` to serve for `file`.
 *
 * Guarantee: a commented descriptor from `sourceInfo` is used only when, minus its
 * `source_code_info`, it equals the descriptor compiled into the generated code; otherwise (a
 * file we did not generate, or a stale set) the plain `file.proto` is served. Reflection therefore
 * never describes a schema other than the one the server actually speaks.
 */
export function serializeFile(file: DescFile, sourceInfo: ReadonlyMap<string, FileDescriptorProto>): Uint8Array {
  const commented = sourceInfo.get(file.proto.name);
  if (commented !== undefined && equals(FileDescriptorProtoSchema, withoutSourceInfo(commented), file.proto)) {
    return toBinary(FileDescriptorProtoSchema, commented);
  }
  return toBinary(FileDescriptorProtoSchema, file.proto);
}

function withoutSourceInfo(file: FileDescriptorProto): FileDescriptorProto {
  const copy = clone(FileDescriptorProtoSchema, file);
  copy.sourceCodeInfo = undefined;
  return copy;
}
