/**
 * Small conversions both OpenAI styles share, so the two `convert.ts` files say the same
 * thing the same way.
 */
import type { JsonObject, ModelPart } from "./types.ts";

/** What both `convert.ts` files need to know about the provider they build a request for. */
export interface ConvertOptions {
  /** Whether image parts are sent as images (otherwise as a text placeholder). */
  supportsImages: boolean;
  /** OpenAI's own endpoint (see `isOpenAIEndpoint`): each API has fields only it takes. */
  openaiEndpoint: boolean;
}

/** The system blocks as one instruction text (empty blocks skipped); undefined when none. */
export function joinSystem(system: string[]): string | undefined {
  const text = system.filter((block) => block.trim() !== "").join("\n\n");
  return text === "" ? undefined : text;
}

/** An image as a `data:` URL, the form both OpenAI APIs accept inline. */
export function imageDataURL(image: Extract<ModelPart, { type: "image" }>): string {
  return `data:${image.mediaType};base64,${Buffer.from(image.data).toString("base64")}`;
}

/** What a model that cannot take images (or an assistant turn, which cannot hold one) sees instead. */
export function imagePlaceholder(image: Extract<ModelPart, { type: "image" }>): string {
  return `[image omitted: ${image.mediaType}, ${image.data.byteLength} bytes]`;
}

/** Tool output as the model reads it; OpenAI has no error flag, so errors say so in the text. */
export function toolResultText(result: Extract<ModelPart, { type: "tool_result" }>): string {
  return result.isError ? `Error: ${result.content}` : result.content;
}

/** Tool arguments as the JSON text both APIs want. */
export function argumentsText(input: JsonObject): string {
  return JSON.stringify(input);
}

/** True for OpenAI's own endpoint (no base URL, or one on api.openai.com). */
export function isOpenAIEndpoint(baseURL: string | undefined): boolean {
  if (baseURL === undefined) return true;
  try {
    return new URL(baseURL).hostname === "api.openai.com";
  } catch {
    return false;
  }
}
