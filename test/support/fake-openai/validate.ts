/**
 * The request checks the real APIs make that a converter can get wrong, with OpenAI's own
 * wording where it matters. A request failing one is answered 400 like OpenAI would, so
 * a broken transcript fails a test instead of passing against a lenient fake.
 */

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** OpenAI's rule for function names (tools and calls in history), with its wording. */
function nameProblem(name: unknown, where: string): string | undefined {
  if (typeof name !== "string") return `Invalid '${where}': expected a string.`;
  if (name.length > 64)
    return `Invalid '${where}': string too long. Expected a string with maximum length 64, but got a string with length ${name.length} instead.`;
  if (!/^[a-zA-Z0-9_-]+$/.test(name))
    return `Invalid '${where}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`;
  return undefined;
}

/** An error message for an invalid Chat Completions request, or undefined. */
export function chatRequestProblem(body: Obj): string | undefined {
  if (typeof body.model !== "string" || body.model === "") return "you must provide a model parameter";
  if (body.stream !== true) return "fake-openai only serves stream: true";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "'messages' must be a non-empty array";
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools) || body.tools.length === 0) return "[] is too short - 'tools'";
    for (const [i, tool] of (body.tools as unknown[]).entries()) {
      if (!isObj(tool) || tool.type !== "function" || !isObj(tool.function) || typeof tool.function.name !== "string") {
        return "each tool must be {type: 'function', function: {name, parameters}}";
      }
      const problem = nameProblem(tool.function.name, `tools[${i}].function.name`);
      if (problem) return problem;
    }
  }
  let open: Set<string> | undefined; // tool_call ids still waiting for their tool message
  for (const [i, m] of (body.messages as unknown[]).entries()) {
    if (!isObj(m)) return `messages[${i}] must be an object`;
    if (m.role === "tool") {
      if (!open || typeof m.tool_call_id !== "string" || !open.delete(m.tool_call_id)) {
        return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.";
      }
      if (typeof m.content !== "string") return `messages[${i}].content must be a string`;
      continue;
    }
    if (open && open.size > 0) {
      return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(", ")}`;
    }
    open = undefined;
    if (!["system", "developer", "user", "assistant"].includes(m.role as string)) return `messages[${i}].role is invalid`;
    if (m.role === "assistant" && Array.isArray(m.tool_calls)) {
      open = new Set(m.tool_calls.map((c: Obj) => c.id as string));
      for (const [j, call] of (m.tool_calls as Obj[]).entries()) {
        if (typeof (call.function as Obj | undefined)?.arguments !== "string") return `messages[${i}].tool_calls arguments must be a string`;
        const problem = nameProblem((call.function as Obj).name, `messages[${i}].tool_calls[${j}].function.name`);
        if (problem) return problem;
      }
    } else if (m.role === "user" && Array.isArray(m.content)) {
      for (const part of m.content as Obj[]) {
        if (part.type === "image_url" && !/^(data:|https?:)/.test(String((part.image_url as Obj | undefined)?.url))) {
          return `messages[${i}] image_url must be a URL`;
        }
        if (part.type !== "text" && part.type !== "image_url") return `messages[${i}] has an invalid content part`;
      }
    } else if (m.content !== null && typeof m.content !== "string" && !Array.isArray(m.content)) {
      return `messages[${i}].content is invalid`;
    }
  }
  if (open && open.size > 0) {
    return `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open].join(", ")}`;
  }
  return undefined;
}

/** An error message for an invalid Responses request, or undefined. */
export function responsesRequestProblem(body: Obj): string | undefined {
  if (typeof body.model !== "string" || body.model === "") return "Missing required parameter: 'model'.";
  if (body.stream !== true) return "fake-openai only serves stream: true";
  if (!Array.isArray(body.input)) return "fake-openai expects 'input' as a list of items";
  for (const [i, tool] of (Array.isArray(body.tools) ? (body.tools as unknown[]) : []).entries()) {
    const problem = isObj(tool) && tool.type === "function" ? nameProblem(tool.name, `tools[${i}].name`) : undefined;
    if (problem) return problem;
  }
  const calls = new Set<string>();
  const answered = new Set<string>();
  for (const [i, item] of (body.input as unknown[]).entries()) {
    if (!isObj(item)) return `input[${i}] must be an object`;
    const type = item.type ?? "message";
    if (type === "function_call") {
      if (typeof item.call_id !== "string" || typeof item.name !== "string" || typeof item.arguments !== "string") {
        return `input[${i}]: a function_call needs call_id, name and arguments (a string)`;
      }
      const problem = nameProblem(item.name, `input[${i}].name`);
      if (problem) return problem;
      calls.add(item.call_id);
    } else if (type === "function_call_output") {
      if (typeof item.call_id !== "string" || !calls.has(item.call_id)) {
        return `No tool call found for function call output with call_id ${String(item.call_id)}.`;
      }
      answered.add(item.call_id);
    } else if (type === "reasoning") {
      if (typeof item.id !== "string" || !Array.isArray(item.summary)) return `input[${i}]: a reasoning item needs id and summary`;
    } else if (type === "message") {
      if (!["user", "assistant", "system", "developer"].includes(item.role as string)) return `input[${i}].role is invalid`;
      if (Array.isArray(item.content)) {
        for (const part of item.content as Obj[]) {
          if (part.type === "input_image" && typeof part.image_url !== "string" && typeof part.file_id !== "string") {
            return `input[${i}]: input_image needs image_url or file_id`;
          }
          if (!["input_text", "input_image", "output_text"].includes(part.type as string)) return `input[${i}] has an invalid content part`;
        }
      } else if (typeof item.content !== "string") return `input[${i}].content is invalid`;
    } else return `input[${i}].type '${String(type)}' is not supported by fake-openai`;
  }
  for (const id of calls) if (!answered.has(id)) return `No tool output found for function call ${id}.`;
  return undefined;
}
