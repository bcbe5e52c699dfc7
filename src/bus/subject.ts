/**
 * NATS subject matching: tokens separated by `.`; in a filter `*` matches one token and a
 * final `>` one or more. Subjects themselves contain no wildcards.
 */
export function subjectMatches(filter: string, subject: string): boolean {
  if (filter === subject) return true;
  const f = filter.split(".");
  const s = subject.split(".");
  for (let i = 0; i < f.length; i++) {
    const token = f[i];
    if (token === ">") return i === f.length - 1 && s.length > i;
    if (i >= s.length) return false;
    if (token !== "*" && token !== s[i]) return false;
  }
  return f.length === s.length;
}

/** True for a valid publish subject: non-empty tokens without spaces or wildcards. */
export function isValidSubject(subject: string): boolean {
  return subject.split(".").every((t) => t !== "" && t !== "*" && t !== ">" && !/\s/.test(t));
}
