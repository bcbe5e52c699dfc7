// Provider-safe tool names: every name fits `^[a-zA-Z0-9_-]{1,64}$`, the renaming is
// reversible, deterministic (order does not matter) and collision-free, also against a client
// that names a tool exactly like another tool's mapped name.
import { describe, expect, it } from "vitest";
import {
  type ModelAdapter,
  type ModelMessage,
  type ModelRequest,
  PROVIDER_TOOL_NAME,
  providerToolNames,
  withProviderToolNames,
} from "../../src/models/index.ts";

const unsafe = ["github.create_issue", "a".repeat(80), "has space", "", "ünïcödé", "x/y", "a".repeat(81)];

describe("providerToolNames", () => {
  it("keeps safe names, maps the others into the pattern, and maps back", () => {
    const map = providerToolNames(["ok_name", "ok-2", ...unsafe]);
    expect(map.identity).toBe(false);
    expect(map.toProvider("ok_name")).toBe("ok_name");
    expect(map.toProvider("ok-2")).toBe("ok-2");
    const safe = unsafe.map((n) => map.toProvider(n));
    for (const name of safe) expect(name).toMatch(PROVIDER_TOOL_NAME);
    expect(new Set(safe).size).toBe(unsafe.length);
    expect(safe.map((n) => map.fromProvider(n))).toEqual(unsafe);
    expect(map.toProvider("github.create_issue")).toMatch(/^github_create_issue_[0-9a-f]{8}$/);
    // A name the map does not know (a model's invention) passes through.
    expect(map.fromProvider("made_up")).toBe("made_up");
  });

  it("is the identity when every name is safe", () => {
    const map = providerToolNames(["read_file", "write-file"]);
    expect(map.identity).toBe(true);
    expect(map.toProvider("read_file")).toBe("read_file");
  });

  it("depends on the set of names only, not on their order", () => {
    const forward = providerToolNames(unsafe);
    const backward = providerToolNames([...unsafe].reverse());
    for (const name of unsafe) expect(backward.toProvider(name)).toBe(forward.toProvider(name));
  });

  it("never collides: a safe name equal to another's mapped name keeps it, the mapped one moves", () => {
    const squatted = providerToolNames(["a.b"]).toProvider("a.b");
    const map = providerToolNames(["a.b", squatted, "a_b"]);
    expect(map.toProvider(squatted)).toBe(squatted);
    expect(map.toProvider("a_b")).toBe("a_b");
    const moved = map.toProvider("a.b");
    expect(moved).not.toBe(squatted);
    expect(moved).toMatch(PROVIDER_TOOL_NAME);
    expect(map.fromProvider(moved)).toBe("a.b");
    expect(map.fromProvider(squatted)).toBe(squatted);
  });

  it("long names that differ only after 55 characters get different names", () => {
    const a = `${"n".repeat(70)}_a`;
    const b = `${"n".repeat(70)}_b`;
    const map = providerToolNames([a, b]);
    expect(map.toProvider(a)).not.toBe(map.toProvider(b));
    expect(map.toProvider(a)).toHaveLength(64);
  });
});

describe("withProviderToolNames", () => {
  /** An adapter that records the tool names of each request it gets. */
  const recording = (): { adapter: ModelAdapter; seen: string[][] } => {
    const seen: string[][] = [];
    const adapter: ModelAdapter = {
      provider: "recording",
      async *stream(request) {
        seen.push(request.messages.flatMap((m) => m.parts.flatMap((p) => (p.type === "tool_use" || p.type === "tool_result" ? [p.name] : []))));
        yield { type: "finish", reason: "end_turn" };
      },
    };
    return { adapter, seen };
  };
  const call = (name: string, id: string): ModelMessage => ({ role: "assistant", parts: [{ type: "tool_use", id, name, input: {} }] });
  const request = (messages: ModelMessage[]): ModelRequest => ({ model: "m", system: [], messages, tools: [], signal: new AbortController().signal });
  const send = async (adapter: ModelAdapter, messages: ModelMessage[]): Promise<void> => {
    for await (const _ of withProviderToolNames(adapter).stream(request(messages))) {
      // drained
    }
  };

  it("renames the history's names as it grows, and as it is rewritten from the same first message", async () => {
    const { adapter, seen } = recording();
    const first: ModelMessage = { role: "user", parts: [{ type: "text", text: "hi" }] };
    const history = [first, call("read_file", "1")];
    await send(adapter, history);
    expect(seen.at(-1)).toEqual(["read_file"]);
    history.push(call("github.create_issue", "2"));
    await send(adapter, history);
    expect(seen.at(-1)?.[1]).toMatch(/^github_create_issue_[0-9a-f]{8}$/);
    // The unsafe call replaced in place (as a rewrite does): nothing needs renaming any more.
    const rewritten = [first, history[1] as ModelMessage, call("write_file", "3")];
    await send(adapter, rewritten);
    expect(seen.at(-1)).toEqual(["read_file", "write_file"]);
    // And the grown original again, exactly as before.
    await send(adapter, history);
    expect(seen.at(-1)?.[1]).toMatch(/^github_create_issue_[0-9a-f]{8}$/);
  });
});
