/**
 * The glob dialect of permission rules, chosen so that matching is linear in practice and
 * O(name × pattern) at worst, whatever the pattern: `*` (any run of characters, `/`
 * included: tool names are not paths), `?` (one character), `[...]` classes with ranges
 * and `!`/`^` negation, and `\` to escape. Extglobs, braces and alternation are refused,
 * because their backtracking is what lets one pattern freeze a process.
 */

type Token = { kind: "literal"; char: string } | { kind: "one" } | { kind: "star" } | { kind: "class"; negated: boolean; ranges: [string, string][] };

/** A compiled glob, or why the text is not one. */
export type CompiledGlob = { ok: true; matches: (name: string) => boolean } | { ok: false; error: string };

/** Characters that mean something in other glob dialects; refused so a pattern never silently means less. */
const UNSUPPORTED = new Set(["(", ")", "{", "}", "|", "+", "@", "!"]);

/** Compiles `pattern`; never throws. */
export function compileGlob(pattern: string): CompiledGlob {
  const chars = Array.from(pattern);
  const tokens: Token[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === "\\") {
      const next = chars[++i];
      if (next === undefined) return { ok: false, error: "ends with an unescaped \\" };
      tokens.push({ kind: "literal", char: next });
    } else if (c === "*") {
      // `**` is the same as `*` here: consecutive stars would only add backtracking.
      if (tokens.at(-1)?.kind !== "star") tokens.push({ kind: "star" });
    } else if (c === "?") {
      tokens.push({ kind: "one" });
    } else if (c === "[") {
      const parsed = parseClass(chars, i);
      if (typeof parsed === "string") return { ok: false, error: parsed };
      tokens.push(parsed.token);
      i = parsed.end;
    } else if (c === "]") {
      return { ok: false, error: `unmatched "]" at position ${i}` };
    } else if (UNSUPPORTED.has(c)) {
      return { ok: false, error: `"${c}" at position ${i} is not supported (only *, ? and [...] are; escape it with \\ to match it)` };
    } else {
      tokens.push({ kind: "literal", char: c });
    }
  }
  return { ok: true, matches: (name) => matchTokens(tokens, Array.from(name)) };
}

/** The class that opens at `chars[start]` (`[`), and the index of its closing `]`. */
function parseClass(chars: string[], start: number): { token: Token; end: number } | string {
  let i = start + 1;
  const negated = chars[i] === "!" || chars[i] === "^";
  if (negated) i++;
  const ranges: [string, string][] = [];
  // A `]` right after the opening (or its negation) is a member, as in POSIX.
  let first = true;
  for (; i < chars.length; i++) {
    let c = chars[i]!;
    if (c === "]" && !first) return ranges.length === 0 ? `empty class at position ${start}` : { token: { kind: "class", negated, ranges }, end: i };
    first = false;
    if (c === "\\") {
      const next = chars[++i];
      if (next === undefined) break;
      c = next;
    }
    if (chars[i + 1] === "-" && chars[i + 2] !== undefined && chars[i + 2] !== "]") {
      let hi = chars[i + 2]!;
      i += 2;
      if (hi === "\\") {
        const next = chars[++i];
        if (next === undefined) break;
        hi = next;
      }
      if (hi < c) return `reversed range "${c}-${hi}" at position ${start}`;
      ranges.push([c, hi]);
    } else {
      ranges.push([c, c]);
    }
  }
  return `unclosed "[" at position ${start}`;
}

function tokenMatches(token: Exclude<Token, { kind: "star" }>, char: string): boolean {
  switch (token.kind) {
    case "literal":
      return token.char === char;
    case "one":
      return true;
    case "class":
      return token.ranges.some(([lo, hi]) => char >= lo && char <= hi) !== token.negated;
  }
}

/**
 * Wildcard matching that backtracks only to the most recent star: a later star makes
 * every earlier choice final, so the work is bounded by name length × pattern length.
 */
function matchTokens(tokens: readonly Token[], name: readonly string[]): boolean {
  let t = 0;
  let n = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (n < name.length) {
    const token = tokens[t];
    if (token !== undefined && token.kind === "star") {
      starAt = t++;
      resumeAt = n;
    } else if (token !== undefined && tokenMatches(token, name[n]!)) {
      t++;
      n++;
    } else if (starAt >= 0) {
      t = starAt + 1;
      n = ++resumeAt;
    } else {
      return false;
    }
  }
  while (tokens[t]?.kind === "star") t++;
  return t === tokens.length;
}
