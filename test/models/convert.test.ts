import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenAIChatModel, OpenAIResponsesModel, type ModelMessage } from "../../src/models/index.ts";
import { toChatRequest } from "../../src/models/openai-chat/convert.ts";
import { isReasoningModel, reasoningSignature, toResponsesRequest } from "../../src/models/openai-responses/convert.ts";
import { pairToolResults } from "../../src/models/tool-pairing.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai/index.ts";
import { collect, request } from "./helpers.ts";

const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3]);
const pngURL = `data:image/png;base64,${Buffer.from(png).toString("base64")}`;

/** A transcript with every part kind, in the order an agent produces them. */
const transcript: ModelMessage[] = [
  {
    role: "user",
    parts: [
      { type: "text", text: "What is in this picture?" },
      { type: "image", mediaType: "image/png", data: png },
    ],
  },
  {
    role: "assistant",
    parts: [
      { type: "thinking", thinking: "The user wants a description.", signature: reasoningSignature("rs_1", "ENC1") },
      { type: "text", text: "Let me check two files." },
      { type: "tool_use", id: "call_1", name: "read_file", input: { path: "a.txt" } },
      { type: "tool_use", id: "call_2", name: "read_file", input: { path: "b.txt" } },
    ],
  },
  {
    role: "user",
    parts: [
      { type: "tool_result", toolUseId: "call_2", name: "read_file", content: "B contents", isError: false },
      { type: "tool_result", toolUseId: "call_1", name: "read_file", content: "no such file", isError: true },
    ],
  },
  {
    role: "assistant",
    parts: [
      { type: "thinking", thinking: "unsigned thoughts" },
      { type: "text", text: "A is missing; B says hi." },
    ],
  },
  { role: "user", parts: [{ type: "text", text: "Thanks." }] },
];

const tools = [
  { name: "read_file", description: "Reads a file", parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } },
];

describe("chat conversion", () => {
  const body = toChatRequest(request({ system: ["Be brief.", "", "Use tools."], messages: transcript, tools, maxOutputTokens: 321 }), {
    supportsImages: true,
    openaiEndpoint: true,
  });

  it("joins system blocks into one system message", () => {
    expect(body.messages[0]).toEqual({ role: "system", content: "Be brief.\n\nUse tools." });
  });

  it("sends images as data URLs in user content", () => {
    expect(body.messages[1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: pngURL } },
      ],
    });
  });

  it("sends tool calls with JSON arguments and drops thinking", () => {
    expect(body.messages[2]).toEqual({
      role: "assistant",
      content: "Let me check two files.",
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
        { id: "call_2", type: "function", function: { name: "read_file", arguments: '{"path":"b.txt"}' } },
      ],
    });
    expect(JSON.stringify(body)).not.toContain("description.");
    expect(JSON.stringify(body)).not.toContain("unsigned thoughts");
  });

  it("answers tool calls with tool messages in call order, errors marked", () => {
    expect(body.messages.slice(3, 5)).toEqual([
      { role: "tool", tool_call_id: "call_1", content: "Error: no such file" },
      { role: "tool", tool_call_id: "call_2", content: "B contents" },
    ]);
    expect(body.messages.slice(5)).toEqual([
      { role: "assistant", content: "A is missing; B says hi." },
      { role: "user", content: "Thanks." },
    ]);
  });

  it("declares tools as functions and uses max_completion_tokens on OpenAI", () => {
    expect(body.tools).toEqual([{ type: "function", function: tools[0] }]);
    expect(body.max_completion_tokens).toBe(321);
    expect(body.max_tokens).toBeUndefined();
    expect(body.stream_options).toEqual({ include_usage: true });
  });

  it("replaces images with a placeholder where the provider takes none, and omits empty tools", () => {
    const plain = toChatRequest(request({ messages: transcript.slice(0, 1) }), { supportsImages: false, openaiEndpoint: false });
    expect(plain.messages[1]).toEqual({ role: "user", content: "What is in this picture?\n\n[image omitted: image/png, 7 bytes]" });
    expect(plain.tools).toBeUndefined();
  });
});

describe("responses conversion", () => {
  const body = toResponsesRequest(request({ model: "gpt-4.1", system: ["Be brief."], messages: transcript, tools, maxOutputTokens: 321 }), {
    supportsImages: true,
    openaiEndpoint: true,
  });

  it("is stateless with instructions, tools and limits", () => {
    expect(body).toMatchObject({ model: "gpt-4.1", stream: true, store: false, instructions: "Be brief.", max_output_tokens: 321 });
    expect(body.tools).toEqual([{ type: "function", ...tools[0], strict: false }]);
    expect(body.reasoning).toBeUndefined(); // gpt-4.1 is no reasoning model
  });

  it("converts every part kind into input items in order", () => {
    expect(body.input).toEqual([
      {
        type: "message",
        role: "user",
        content: [
          { type: "input_text", text: "What is in this picture?" },
          { type: "input_image", image_url: pngURL, detail: "auto" },
        ],
      },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "The user wants a description." }], encrypted_content: "ENC1" },
      { type: "message", role: "assistant", content: "Let me check two files." },
      { type: "function_call", call_id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' },
      { type: "function_call", call_id: "call_2", name: "read_file", arguments: '{"path":"b.txt"}' },
      { type: "function_call_output", call_id: "call_1", output: "Error: no such file" },
      { type: "function_call_output", call_id: "call_2", output: "B contents" },
      { type: "message", role: "assistant", content: "A is missing; B says hi." }, // unsigned thinking dropped
      { type: "message", role: "user", content: [{ type: "input_text", text: "Thanks." }] },
    ]);
  });

  it("asks reasoning models on OpenAI for summaries and encrypted reasoning", () => {
    const reasoning = toResponsesRequest(request({ model: "o4-mini" }), { supportsImages: true, openaiEndpoint: true });
    expect(reasoning.reasoning).toEqual({ summary: "auto" });
    expect(reasoning.include).toEqual(["reasoning.encrypted_content"]);
    const elsewhere = toResponsesRequest(request({ model: "o4-mini" }), { supportsImages: true, openaiEndpoint: false });
    expect(elsewhere.reasoning).toBeUndefined();
    expect(isReasoningModel("gpt-5-mini")).toBe(true);
    expect(isReasoningModel("gpt-5-chat-latest")).toBe(false);
    expect(isReasoningModel("gpt-4o")).toBe(false);
  });
});

describe("tool pairing repair", () => {
  it("adds an error result for a call that got none, and turns stray results into text", () => {
    const repaired = pairToolResults([
      { role: "user", parts: [{ type: "text", text: "go" }] },
      {
        role: "assistant",
        parts: [
          { type: "tool_use", id: "c1", name: "a", input: {} },
          { type: "tool_use", id: "c2", name: "b", input: {} },
        ],
      },
      {
        role: "user",
        parts: [
          { type: "text", text: "also this" },
          { type: "tool_result", toolUseId: "c2", name: "b", content: "two", isError: false },
          { type: "tool_result", toolUseId: "zz", name: "old", content: "stale", isError: false },
          { type: "tool_result", toolUseId: "c2", name: "b", content: "dup", isError: false },
        ],
      },
    ]);
    expect(repaired[2]!.parts).toEqual([
      { type: "tool_result", toolUseId: "c1", name: "a", content: "no result was recorded for this tool call", isError: true },
      { type: "tool_result", toolUseId: "c2", name: "b", content: "two", isError: false },
      { type: "text", text: "also this" },
      { type: "text", text: "[result of tool old (call zz)]\nstale" },
      { type: "text", text: "[result of tool b (call c2)]\ndup" },
    ]);
  });

  it("answers calls of a final assistant message and leaves a clean transcript alone", () => {
    const ending = pairToolResults([{ role: "assistant", parts: [{ type: "tool_use", id: "c9", name: "x", input: {} }] }]);
    expect(ending).toHaveLength(2);
    expect(ending[1]!.parts[0]).toMatchObject({ type: "tool_result", toolUseId: "c9", isError: true });
    expect(pairToolResults(transcript).slice(0, 2)).toEqual(transcript.slice(0, 2));
  });
});

describe("converted requests pass the fake server's API checks", () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  const broken: ModelMessage[] = [
    {
      role: "user",
      parts: [
        { type: "tool_result", toolUseId: "ghost", name: "g", content: "orphan", isError: false },
        { type: "text", text: "hi" },
      ],
    },
    { role: "assistant", parts: [{ type: "tool_use", id: "c1", name: "read_file", input: { path: "x" } }] },
    { role: "user", parts: [{ type: "text", text: "never mind" }] },
  ];

  for (const [api, make] of [
    ["chat", () => new OpenAIChatModel({ provider: "f", baseURL: fake.baseURL, supportsImages: true })],
    ["responses", () => new OpenAIResponsesModel({ provider: "f", baseURL: fake.baseURL, supportsImages: true })],
  ] as const) {
    it(`${api}: the full transcript and a damaged one are accepted`, async () => {
      fake.plan({ text: "ok" }, { text: "ok" });
      await collect(make(), request({ messages: transcript, tools }));
      await collect(make(), request({ messages: broken, tools }));
      expect(fake.requests.slice(-2).map((r) => r.reply?.text)).toEqual(["ok", "ok"]);
    });
  }

  it("the fake really rejects an unpaired transcript (so the test above can fail)", async () => {
    const response = await fetch(`${fake.baseURL}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "m",
        stream: true,
        messages: [
          { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "a", arguments: "{}" } }] },
          { role: "user", content: "x" },
        ],
      }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain("c1");
  });
});
