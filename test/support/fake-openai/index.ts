export { startFakeOpenAI, type FakeOpenAI, type FakeOpenAIOptions, type RecordedRequest } from "./server.ts";
export { splitText, type FakeReply, type FakeToolCall, type FakeUsage } from "./reply.ts";
export { chatFrames } from "./chat-frames.ts";
export { responsesFrames } from "./responses-frames.ts";
