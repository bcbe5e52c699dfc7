import { RozError } from "../errors/index.ts";

/** How a stream receives session events (session-behaviour.md §9). */
export const eventFormats = ["flat", "envelope", "both"] as const;
export type EventFormat = (typeof eventFormats)[number];

/** The request metadata with which a stream chooses its format. */
export const eventFormatHeader = "roz-event-format";

export const isEventFormat = (s: string): s is EventFormat => (eventFormats as readonly string[]).includes(s);

/**
 * The format a streaming call asked for in its `roz-event-format` metadata (case and
 * surrounding blanks ignored), else `fallback` (the server's `ROZ_EVENT_FORMAT`). Any other
 * value throws `invalid_argument`.
 */
export function eventFormatOf(headers: Headers, fallback: EventFormat): EventFormat {
  const raw = headers.get(eventFormatHeader);
  if (raw === null || raw.trim() === "") return fallback;
  const value = raw.trim().toLowerCase();
  if (isEventFormat(value)) return value;
  throw new RozError("invalid_argument", `${eventFormatHeader} must be one of ${eventFormats.join(", ")}, got "${raw}"`);
}
