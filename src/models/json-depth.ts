/** How deeply JSON from clients may nest (objects and arrays); deeper values are refused. */
export const MAX_JSON_DEPTH = 64;

/**
 * The path (keys and indexes from the root) of the first object or array nested deeper than
 * `maxDepth` in `value`, or undefined when it nests no deeper. Iterative, so that the
 * check itself cannot overflow the stack on the values it exists to refuse.
 */
export function tooDeepAt(value: unknown, maxDepth = MAX_JSON_DEPTH): string[] | undefined {
  const stack: { node: unknown; depth: number; path: string[] }[] = [{ node: value, depth: 1, path: [] }];
  while (stack.length > 0) {
    const { node, depth, path } = stack.pop()!;
    if (typeof node !== "object" || node === null) continue;
    if (depth > maxDepth) return path;
    for (const [key, child] of Object.entries(node)) {
      if (typeof child === "object" && child !== null) stack.push({ node: child, depth: depth + 1, path: [...path, key] });
    }
  }
  return undefined;
}
