/**
 * `@roz/client` in browsers (the `browser` export condition): sessions over the AttachSession
 * + SendToSession pair, Connect by default or gRPC-Web; no Node module is imported.
 */
import { RozClientBase } from "./client.ts";
import type { RozClientOptions } from "./options.ts";
import { webPlatform } from "./platform-web.ts";

export * from "./api.ts";

export class RozClient extends RozClientBase {
  constructor(options: RozClientOptions) {
    super(options, webPlatform);
  }
}
