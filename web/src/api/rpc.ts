import { RozClient } from "@roz/client";
import { credentials } from "./credentials.ts";

export type AgentClient = RozClient;

/**
 * The roz client of this tab: the AttachSession + SendToSession pair over Connect (JSON) on
 * this origin, with the tab's key read on every call (a new sign-in applies at once).
 */
export function agentClient(): AgentClient {
  return new RozClient({ baseUrl: location.origin, apiKey: () => credentials.get(), jsonFormat: true });
}
