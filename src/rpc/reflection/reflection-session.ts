import { Code } from "@connectrpc/connect";
import type { DescriptorIndex, IndexedFile } from "./descriptor-index.ts";

/**
 * A reflection request's `message_request` oneof. v1 and v1alpha messages both fit this shape
 * (the two protos are wire- and shape-identical), so one session serves both.
 */
export type ReflectionQuery =
  | { case: "fileByFilename"; value: string }
  | { case: "fileContainingSymbol"; value: string }
  | { case: "fileContainingExtension"; value: { containingType: string; extensionNumber: number } }
  | { case: "allExtensionNumbersOfType"; value: string }
  | { case: "listServices"; value: string }
  | { case: undefined; value?: undefined };

/** A reflection response's `message_response` oneof, as an init shape for v1 or v1alpha. */
export type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** Answers the requests of one reflection stream, in order. */
export interface ReflectionSession {
  /**
   * One answer per query; never throws. Lookup failures are an `errorResponse` (NOT_FOUND, or
   * INVALID_ARGUMENT for a query that sets nothing), so the stream stays usable.
   *
   * File answers hold the requested file first, then those of its transitive imports that were
   * not yet sent on this stream. The requested file itself is always sent (as grpc-go does), so
   * asking twice never yields an empty answer.
   */
  answer(query: ReflectionQuery): ReflectionAnswer;
}

/** Creates the per-stream state (the set of files already sent). */
export function createReflectionSession(index: DescriptorIndex): ReflectionSession {
  const sent = new Set<string>();

  const filesAnswer = (file: IndexedFile): ReflectionAnswer => {
    const out: Uint8Array[] = [file.bytes];
    sent.add(file.name);
    // Breadth-first over imports; `visited` guards against import cycles within this answer.
    const visited = new Set([file.name]);
    const queue = [...file.imports];
    for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
      if (visited.has(name)) continue;
      visited.add(name);
      const dep = index.fileByName(name);
      if (dep === undefined) continue;
      if (!sent.has(name)) {
        sent.add(name);
        out.push(dep.bytes);
      }
      queue.push(...dep.imports);
    }
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: out } };
  };

  const found = (file: IndexedFile | undefined, what: string): ReflectionAnswer => (file !== undefined ? filesAnswer(file) : notFound(what));

  return {
    answer(query) {
      switch (query.case) {
        case "fileByFilename":
          return found(index.fileByName(query.value), `file not found: ${query.value}`);
        case "fileContainingSymbol":
          return found(index.fileBySymbol(query.value), `symbol not found: ${query.value}`);
        case "fileContainingExtension": {
          const { containingType, extensionNumber } = query.value;
          return found(index.fileByExtension(containingType, extensionNumber), `extension not found: ${containingType} field ${extensionNumber}`);
        }
        case "allExtensionNumbersOfType": {
          const numbers = index.extensionNumbers(query.value);
          if (numbers === undefined) return notFound(`type not found: ${query.value}`);
          return {
            case: "allExtensionNumbersResponse",
            value: { baseTypeName: query.value, extensionNumber: [...numbers] },
          };
        }
        case "listServices":
          return {
            case: "listServicesResponse",
            value: { service: index.serviceNames.map((name) => ({ name })) },
          };
        case undefined:
          return errorAnswer(Code.InvalidArgument, "request sets no message_request");
        default: {
          const unknown: never = query;
          return errorAnswer(Code.InvalidArgument, `unknown message_request ${String(unknown)}`);
        }
      }
    },
  };
}

function notFound(message: string): ReflectionAnswer {
  return errorAnswer(Code.NotFound, message);
}

/** `Code` values are the gRPC status codes, which `error_code` carries. */
function errorAnswer(errorCode: Code, errorMessage: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode, errorMessage } };
}
