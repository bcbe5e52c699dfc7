import type { ModelMessage, ModelPart, ToolDefinition } from "../models/index.ts";
import type { AgentMode, ClientTool, ContextBlock } from "./types.ts";

const REACT_INSTRUCTIONS = [
  "You are an agent working for the user through tools that run on the user's side.",
  "Think about what is needed, call tools when they help, read their results, and repeat until the task is done; then answer concisely.",
  "Tool results can fail or be denied: adapt instead of repeating the same call.",
].join(" ");

const OODA_INSTRUCTIONS = [
  "You are an agent working for the user through tools that run on the user's side.",
  "Work in Observe-Orient-Decide-Act cycles.",
  "Observe: each cycle starts with fresh observations (results of the observation tools, called for you); without them, observe with the tools you have before acting.",
  "Orient: relate the observations to the goal and to what changed since the last cycle.",
  "Decide: choose the single most useful next action.",
  "Act: call the tool for it, or answer when the goal is reached.",
  "Keep each cycle small; results can fail or be denied: re-observe and adapt instead of repeating the same call.",
].join(" ");

/** Our base instructions for a mode: short, and mode-specific for OODA. */
export function baseInstructions(mode: AgentMode): string {
  return mode === "ooda_re_act" ? OODA_INSTRUCTIONS : REACT_INSTRUCTIONS;
}

/**
 * The system blocks of a turn, in order: base instructions, environment instructions, the
 * client's system prompt, project context blocks, then the turn's system context. Empty
 * blocks are left out.
 */
export function assembleSystem(input: {
  mode: AgentMode;
  instructions?: string | undefined;
  systemPrompt?: readonly string[] | undefined;
  projectContext: readonly string[];
  systemContext?: string | undefined;
}): string[] {
  const blocks = [baseInstructions(input.mode), input.instructions ?? "", ...(input.systemPrompt ?? []), ...input.projectContext, input.systemContext ?? ""];
  return blocks.filter((b) => b.trim() !== "");
}

/**
 * The user message of a turn: the content, then each context block. Text blocks read
 * `[label] text`; images become image parts (after a `[label]` line) when the model takes
 * images, and every other binary block a placeholder `[label] (mime, N bytes)`.
 */
export function buildUserMessage(content: string, context: readonly ContextBlock[], supportsImages: boolean): ModelMessage {
  const parts: ModelPart[] = [];
  if (content !== "") parts.push({ type: "text", text: content });
  for (const block of context) {
    const label = block.label !== undefined && block.label !== "" ? `[${block.label}] ` : "";
    if ("text" in block) {
      parts.push({ type: "text", text: `${label}${block.text}` });
    } else if (supportsImages && block.mimeType.startsWith("image/")) {
      if (label !== "") parts.push({ type: "text", text: label.trimEnd() });
      parts.push({ type: "image", mediaType: block.mimeType, data: block.data });
    } else {
      parts.push({ type: "text", text: `${label}(${block.mimeType}, ${block.data.byteLength} bytes)` });
    }
  }
  // A provider rejects an empty message; an empty prompt is still a turn.
  if (parts.length === 0) parts.push({ type: "text", text: "" });
  return { role: "user", parts };
}

/** Client tools as the model sees them; an empty schema becomes an empty object schema. */
export function toolDefinitions(tools: readonly ClientTool[]): ToolDefinition[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description,
    parameters: Object.keys(t.parametersSchema).length === 0 ? { type: "object", properties: {} } : t.parametersSchema,
  }));
}
