import type { DescFile } from "@bufbuild/protobuf";
import type { FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { serializeFile } from "./source-info.ts";
import { fileDeclarations } from "./symbols.ts";

/** One proto file as reflection serves it. */
export interface IndexedFile {
  /** The file name with its `.proto` suffix, e.g. `roz/v1/agent.proto`. */
  readonly name: string;
  /** The serialized `google.protobuf.FileDescriptorProto`. */
  readonly bytes: Uint8Array;
  /** Names of the files this one imports, in import order. */
  readonly imports: readonly string[];
}

/** Read-only lookups over a fixed set of proto files and their transitive imports. */
export interface DescriptorIndex {
  /** Full names of the services to list, in registration order, without duplicates. */
  readonly serviceNames: readonly string[];
  fileByName(name: string): IndexedFile | undefined;
  fileBySymbol(symbol: string): IndexedFile | undefined;
  fileByExtension(extendee: string, fieldNumber: number): IndexedFile | undefined;
  /** Extension field numbers of a known message type (possibly none); undefined if unknown. */
  extensionNumbers(typeName: string): readonly number[] | undefined;
}

/**
 * Indexes `roots` and everything they import (well-known types included, from their
 * `@bufbuild/protobuf/wkt` descriptors). All descriptors are serialized here, once, so answering
 * a request is lookups only.
 */
export function createDescriptorIndex(
  roots: readonly DescFile[],
  serviceNames: readonly string[],
  sourceInfo: readonly FileDescriptorProto[],
): DescriptorIndex {
  const commented = new Map(sourceInfo.map((file) => [file.name, file]));
  const files = new Map<string, IndexedFile>();
  const symbols = new Map<string, IndexedFile>();
  const extensions = new Map<string, IndexedFile>();
  const extensionNumbers = new Map<string, number[]>();
  const messageTypes = new Set<string>();

  for (const file of transitiveFiles(roots)) {
    const indexed: IndexedFile = {
      name: file.proto.name,
      bytes: serializeFile(file, commented),
      imports: file.dependencies.map((dep) => dep.proto.name),
    };
    files.set(indexed.name, indexed);
    const declared = fileDeclarations(file.proto);
    for (const symbol of declared.symbols) symbols.set(symbol, indexed);
    for (const message of declared.messages) messageTypes.add(message);
    for (const { extendee, fieldNumber } of declared.extensions) {
      extensions.set(extensionKey(extendee, fieldNumber), indexed);
      extensionNumbers.set(extendee, [...(extensionNumbers.get(extendee) ?? []), fieldNumber]);
    }
  }

  return {
    serviceNames: [...new Set(serviceNames)],
    fileByName: (name) => files.get(name),
    fileBySymbol: (symbol) => symbols.get(symbol.startsWith(".") ? symbol.slice(1) : symbol),
    fileByExtension: (extendee, fieldNumber) => extensions.get(extensionKey(extendee, fieldNumber)),
    extensionNumbers: (typeName) => (messageTypes.has(typeName) ? (extensionNumbers.get(typeName) ?? []) : undefined),
  };
}

function extensionKey(extendee: string, fieldNumber: number): string {
  return `${extendee}#${fieldNumber}`;
}

/** `roots` and their transitive imports, each file once. */
function transitiveFiles(roots: readonly DescFile[]): DescFile[] {
  const seen = new Map<string, DescFile>();
  const visit = (file: DescFile): void => {
    if (seen.has(file.proto.name)) return;
    seen.set(file.proto.name, file);
    file.dependencies.forEach(visit);
  };
  roots.forEach(visit);
  return [...seen.values()];
}
