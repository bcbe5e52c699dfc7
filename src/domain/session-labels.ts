/**
 * What names a session for people looking for it again: a title and string metadata, set at
 * start and changed later. The limits keep a session row small and a metadata filter cheap;
 * they follow common practice for API metadata (16 pairs, 64-character keys, 512-character values).
 */
export const SESSION_LABEL_LIMITS = {
  titleChars: 256,
  metadataPairs: 16,
  keyChars: 64,
  valueChars: 512,
} as const;

/** Control characters make keys unprintable in logs and ambiguous in `metadata.KEY` query parameters. */
const CONTROL = /\p{Cc}/u;

/** Why `title` cannot be stored (`field` names it in the message), or undefined when it can. */
export function titleProblem(title: string, field: string): string | undefined {
  if ([...title].length > SESSION_LABEL_LIMITS.titleChars) return `${field} is longer than ${SESSION_LABEL_LIMITS.titleChars} characters`;
  return undefined;
}

/**
 * Why a metadata map (values `null` mean "remove", in a patch) cannot be stored, or undefined.
 * The pair count is checked on the merged result by the store.
 */
export function metadataProblem(metadata: Readonly<Record<string, string | null>>, field: string): string | undefined {
  const { keyChars, valueChars, metadataPairs } = SESSION_LABEL_LIMITS;
  const entries = Object.entries(metadata);
  if (entries.length > metadataPairs) return `${field} has more than ${metadataPairs} keys`;
  for (const [key, value] of entries) {
    if (key === "" || [...key].length > keyChars || CONTROL.test(key)) {
      return `${field} key "${key.slice(0, keyChars)}" must be 1 to ${keyChars} characters without control characters`;
    }
    if (value !== null && [...value].length > valueChars) return `${field}["${key}"] is longer than ${valueChars} characters`;
  }
  return undefined;
}

/** The metadata after a patch: keys given are set, keys given as `null` removed. */
export function mergeMetadata(current: Readonly<Record<string, string>>, patch: Readonly<Record<string, string | null>>): Record<string, string> {
  // A Map, then own properties: a key such as "__proto__" stays a plain key.
  const merged = new Map(Object.entries(current));
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) merged.delete(key);
    else merged.set(key, value);
  }
  return Object.fromEntries(merged);
}
