/**
 * A fold over a list that mostly grows at its end, such as a conversation's history before
 * each model call: the items already folded are checked by identity (cheap) and only the new
 * ones are folded, so a call costs what the history gained instead of its whole length. Any
 * other change (a compaction, a rollback, another list) folds the list again from the start:
 * the result is always the fold of exactly the list given.
 *
 * `add` may update `state` in place and return it: the state handed out is meant to be read
 * before the next `of`.
 */
export class PrefixFold<T, S> {
  readonly #initial: () => S;
  readonly #add: (state: S, item: T) => S;
  #folded: T[] = [];
  #state: S;

  constructor(initial: () => S, add: (state: S, item: T) => S) {
    this.#initial = initial;
    this.#add = add;
    this.#state = initial();
  }

  of(items: readonly T[]): S {
    const folded = this.#folded;
    let same = folded.length <= items.length;
    for (let i = 0; same && i < folded.length; i++) same = folded[i] === items[i];
    if (!same) {
      folded.length = 0;
      this.#state = this.#initial();
    }
    for (let i = folded.length; i < items.length; i++) {
      const item = items[i] as T;
      this.#state = this.#add(this.#state, item);
      folded.push(item);
    }
    return this.#state;
  }
}

/**
 * A fold of many lists at once, each remembered under its first item: for code that sees
 * every session's conversation without knowing which session it is (a model adapter). A
 * conversation keeps its first message until a rewrite, after which it is folded again.
 * Lists that share a first item (a fork and its origin) share a fold and refold as they
 * alternate: still exact, only not incremental.
 */
export function foldByFirstItem<T extends object, S>(initial: () => S, add: (state: S, item: T) => S): (items: readonly T[]) => S {
  const folds = new WeakMap<T, PrefixFold<T, S>>();
  return (items) => {
    const first = items[0];
    if (first === undefined) return initial();
    let fold = folds.get(first);
    if (fold === undefined) {
      fold = new PrefixFold(initial, add);
      folds.set(first, fold);
    }
    return fold.of(items);
  };
}
