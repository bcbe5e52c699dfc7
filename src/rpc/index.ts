export { createAgentService } from "./agent-service.ts";
export { toConnectError } from "./connect-errors.ts";
export { conversationJson } from "./conversation-json.ts";
export { responseToWire, usageToWire, ruleToWire } from "./to-wire.ts";
export { rawRequestKey, type RawRequestInfo, type RpcAuthenticator } from "./context-values.ts";
export type { StreamSessionDeps } from "./stream-session.ts";
export { eventFormats, eventFormatHeader, eventFormatOf, type EventFormat } from "./event-format.ts";
export { createResponseEncoder, encoderOf, type ResponseEncoder } from "./responses.ts";
export { encodeTeamEvent, teamEventToWire } from "./team-to-wire.ts";
