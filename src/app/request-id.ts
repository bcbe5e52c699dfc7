import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/** A request's id: the client's `x-request-id` when it is a plain token, else a new UUID. */
export function requestIdOf(headers: IncomingHttpHeaders): string {
  const given = headers["x-request-id"];
  return typeof given === "string" && /^[\w.:-]{1,128}$/.test(given) ? given : randomUUID();
}
