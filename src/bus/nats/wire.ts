import { headers as natsHeaders, type MsgHdrs } from "@nats-io/transport-node";
import { RozError } from "../../errors/index.ts";
import { isValidSubject } from "../subject.ts";

/** Our headers as NATS headers (none when empty). */
export const toHeaders = (record: Record<string, string> | undefined): MsgHdrs | undefined => {
  if (record === undefined || Object.keys(record).length === 0) return undefined;
  const h = natsHeaders();
  for (const [k, v] of Object.entries(record)) h.set(k, v);
  return h;
};

export const fromHeaders = (h: MsgHdrs | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  if (h === undefined) return out;
  for (const k of h.keys()) out[k] = h.get(k);
  return out;
};

export function checkSubject(subject: string): void {
  if (!isValidSubject(subject)) throw new RozError("invalid_argument", `invalid subject "${subject}"`);
}
