export { createAgentService } from "./agent-service.ts";
export { toConnectError } from "./connect-errors.ts";
export { encodeResponse } from "./response-writer.ts";
export { responseToWire, usageToWire, ruleToWire } from "./to-wire.ts";
export { rawRequestKey, type RawRequestInfo, type RpcAuthenticator } from "./context-values.ts";
export type { StreamSessionDeps } from "./stream-session.ts";
