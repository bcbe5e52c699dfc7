import * as net from "node:net";
import { Readable } from "node:stream";
import { OnePortServer } from "../../src/app/one-port.ts";
const origPush = Readable.prototype.push;
(Readable.prototype as any).push = function (chunk: any, enc: any) { if (chunk === null && this instanceof net.Socket) console.log("PUSH NULL", new Error().stack); return origPush.call(this, chunk, enc); };
const s = new OnePortServer((req, res) => { res.end("hi " + req.httpVersion); }, { maxConcurrentStreams: 100, pingIntervalMs: 0 });
s.server.listen(0, "127.0.0.1", () => console.log("PORT", (s.server.address() as any).port));
setTimeout(() => process.exit(0), 5000);
