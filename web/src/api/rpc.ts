import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AgentService } from "../../../src/gen/roz/v1/agent_pb.js";
import { authHeaders } from "./credentials.ts";

export type AgentClient = Client<typeof AgentService>;

/** Adds the tab's key to every call (read per call, so a new sign-in applies at once). */
const withKey: Interceptor = (next) => (req) => {
  for (const [name, value] of Object.entries(authHeaders())) req.header.set(name, value);
  return next(req);
};

/** AgentService over the Connect protocol (JSON) on this origin: unary and server streams work over fetch. */
export function agentClient(): AgentClient {
  return createClient(AgentService, createConnectTransport({ baseUrl: location.origin, interceptors: [withKey], useBinaryFormat: false }));
}
