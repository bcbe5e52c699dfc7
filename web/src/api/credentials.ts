/** The API key of this browser tab (sessionStorage: gone when the tab closes, never sent elsewhere). */
const KEY = "roz.apiKey";

export const credentials = {
  get: (): string | undefined => sessionStorage.getItem(KEY) ?? undefined,
  set: (key: string): void => sessionStorage.setItem(KEY, key),
  clear: (): void => sessionStorage.removeItem(KEY),
};

/** `authorization` header for the current key, if any. */
export function authHeaders(): Record<string, string> {
  const key = credentials.get();
  return key ? { authorization: `Bearer ${key}` } : {};
}

type Listener = (reason: string) => void;
const listeners = new Set<Listener>();

/** Called when the server refused the key (revoked, expired): the app shows the sign-in form. */
export function onSignedOut(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Forgets the key and tells the app. */
export function signOut(reason: string): void {
  credentials.clear();
  for (const l of listeners) l(reason);
}
