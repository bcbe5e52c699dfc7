import { ChunkedBytes, type MessageCut } from "./chunked-bytes.ts";

/**
 * The body of a Connect unary call (one message, no envelope), screened: it is held until its
 * end, as connect would, and then passed on whole or cut. A body beyond `maxMessageBytes`
 * passes on unread: connect refuses it.
 */
export async function* screenedMessage(body: AsyncIterable<Uint8Array>, maxMessageBytes: number, cutMessage: MessageCut): AsyncGenerator<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const source = body[Symbol.asyncIterator]();
  let ended = false;
  try {
    for (let read = await source.next(); read.done !== true; read = await source.next()) {
      chunks.push(read.value);
      size += read.value.byteLength;
      if (size <= maxMessageBytes) continue;
      for (const chunk of chunks) yield chunk;
      for (let rest = await source.next(); rest.done !== true; rest = await source.next()) yield rest.value;
      ended = true;
      return;
    }
    ended = true;
    const cut = cutMessage(new ChunkedBytes(chunks), 0, size);
    for (const chunk of cut ?? chunks) yield chunk;
  } finally {
    // Connect stops reading a body over its limit: the request is let go (an HTTP/1.1 connection then goes on).
    if (!ended) await source.return?.();
  }
}
