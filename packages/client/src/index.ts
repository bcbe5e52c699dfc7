/**
 * `@roz/client` in Node: sessions over gRPC (bidi StreamSession, HTTP/2) by default, or the
 * AttachSession + SendToSession pair over Connect or gRPC-Web (`transport`). Browsers get
 * `browser.ts` through the `browser` export condition.
 */
import { RozClientBase } from "./client.ts";
import type { RozClientOptions } from "./options.ts";
import { nodePlatform } from "./platform-node.ts";

export * from "./api.ts";

export class RozClient extends RozClientBase {
  constructor(options: RozClientOptions) {
    super(options, nodePlatform);
  }
}
