// A fold over a growing history folds only what it gained, and is exact after any other change.
import { describe, expect, it } from "vitest";
import { TokenCounter } from "../../src/agent/tokens.ts";
import { foldByFirstItem, PrefixFold } from "../../src/domain/index.ts";
import type { ModelMessage } from "../../src/models/index.ts";

/** A sum fold that records the items it added. */
const summing = (): { fold: PrefixFold<{ n: number }, number>; added: number[] } => {
  const added: number[] = [];
  const fold = new PrefixFold<{ n: number }, number>(
    () => 0,
    (sum, item) => {
      added.push(item.n);
      return sum + item.n;
    },
  );
  return { fold, added };
};
const items = (...ns: number[]): { n: number }[] => ns.map((n) => ({ n }));

describe("PrefixFold", () => {
  it("folds only the items added at the end since the last call", () => {
    const { fold, added } = summing();
    const list = items(1, 2, 3);
    expect(fold.of(list)).toBe(6);
    list.push(...items(10, 20));
    expect(fold.of(list)).toBe(36);
    expect(added).toEqual([1, 2, 3, 10, 20]);
    expect(fold.of(list)).toBe(36);
    expect(added).toHaveLength(5);
  });

  it("folds again from the start after a rewrite, a cut, or another list", () => {
    const { fold, added } = summing();
    const list = items(1, 2, 3);
    fold.of(list);
    const rewritten = [list[0]!, { n: 100 }, list[2]!];
    expect(fold.of(rewritten)).toBe(104);
    expect(fold.of(rewritten.slice(0, 2))).toBe(101);
    expect(fold.of(items(7))).toBe(7);
    expect(fold.of([])).toBe(0);
    expect(added).toEqual([1, 2, 3, 1, 100, 3, 1, 100, 7]);
  });
});

describe("foldByFirstItem", () => {
  it("keeps a fold per first item, exact when two lists share one", () => {
    const lengths = foldByFirstItem<{ n: number }, number>(
      () => 0,
      (sum, item) => sum + item.n,
    );
    const a = items(1, 2);
    const b = items(5);
    const fork = [a[0]!, { n: 40 }];
    expect(lengths(a)).toBe(3);
    expect(lengths(b)).toBe(5);
    expect(lengths(fork)).toBe(41);
    a.push({ n: 4 });
    expect(lengths(a)).toBe(7);
    expect(lengths([])).toBe(0);
  });
});

describe("TokenCounter", () => {
  const text = (t: string): ModelMessage => ({ role: "user", parts: [{ type: "text", text: t }] });

  it("counts the conversation as it grows and after it is rewritten, as a fresh count would", () => {
    const counter = new TokenCounter();
    const history = [text("hello there"), text("a second message, a little longer than the first")];
    expect(counter.messages(history)).toBe(new TokenCounter().sumOf(history));
    history.push(text("a third"));
    expect(counter.messages(history)).toBe(new TokenCounter().sumOf(history));
    const compacted = [history[0]!, text("short"), history[2]!];
    expect(counter.sumOf(compacted)).toBe(new TokenCounter().sumOf(compacted));
    expect(counter.messages(compacted)).toBe(new TokenCounter().sumOf(compacted));
    expect(counter.messages(compacted)).toBeLessThan(new TokenCounter().sumOf(history));
  });
});
