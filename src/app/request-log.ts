import { type FastifyReply, type FastifyRequest, LogController } from "fastify";

/** A request that took at least this long is logged at `info` (streams excepted: they last as long as their session). */
const SLOW_REQUEST_MS = 1000;

/** gRPC calls and Connect streams: their time is the stream's life, not a wait. */
const isStream = (request: FastifyRequest): boolean => /^application\/(grpc|connect\+)/.test(request.headers["content-type"] ?? "");

/**
 * Per-request log lines at `debug` (a polling console or a busy client would otherwise fill
 * the log), except a failed request (status 400 and above, or an error) and a slow one,
 * which stay at `info`. Fastify's documented hook for its own request lines.
 */
export class RequestLog extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, "incoming request");
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const responseTime = reply.elapsedTime;
    if (error) {
      reply.log.error({ res: reply, err: error, responseTime }, "request errored");
      return;
    }
    const notable = reply.statusCode >= 400 || (responseTime >= SLOW_REQUEST_MS && !isStream(request));
    const fields = { req: request, res: reply, responseTime };
    if (notable) reply.log.info(fields, "request completed");
    else reply.log.debug(fields, "request completed");
  }
}
