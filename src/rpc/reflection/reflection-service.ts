import type { DescriptorIndex } from "./descriptor-index.ts";
import { createReflectionSession, type ReflectionAnswer, type ReflectionQuery } from "./reflection-session.ts";

/** The part of a v1 or v1alpha `ServerReflectionRequest` the handler reads. */
export interface ReflectionRequestLike {
  host: string;
  messageRequest: ReflectionQuery;
}

/** A `ServerReflectionResponse` init shape, generic over the request's version. */
export interface ReflectionResponseInit<Request> {
  validHost: string;
  originalRequest: Request;
  messageResponse: ReflectionAnswer;
}

/**
 * The `ServerReflectionInfo` bidi handler for either reflection version.
 *
 * Guarantees exactly one response per request, in request order, echoing `host` as
 * `valid_host` and the request as `original_request`. Each call (stream) has its own record of
 * files already sent. Lookup failures never end the stream (see ReflectionSession).
 */
export function reflectionInfoHandler<Request extends ReflectionRequestLike>(
  index: DescriptorIndex,
): (requests: AsyncIterable<Request>) => AsyncIterable<ReflectionResponseInit<Request>> {
  return async function* serverReflectionInfo(requests) {
    const session = createReflectionSession(index);
    for await (const request of requests) {
      yield {
        validHost: request.host,
        originalRequest: request,
        messageResponse: session.answer(request.messageRequest),
      };
    }
  };
}
