const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * True when `text` is a UUID in its 8-4-4-4-12 hex form (either case): the shape of every id
 * this server hands out (sessions, environments, keys, tasks), checked wherever a client names one.
 */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}
