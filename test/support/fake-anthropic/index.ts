/**
 * The fake Anthropic Messages API. It is the same server as fake-openai (one plan queue,
 * the same recording of requests and aborts, the same failure injection), answering
 * `POST /v1/messages` with Anthropic's event stream and error bodies; point the Anthropic
 * SDK's `baseURL` at its `url`.
 */
export { startFakeOpenAI as startFakeAnthropic, type FakeOpenAI as FakeAnthropic } from "../fake-openai/server.ts";
export { messagesFrames } from "./messages-frames.ts";
export { fakeSignature } from "./signature.ts";
