import { ModelError } from "./model-error.ts";

/**
 * Passes a provider stream through, aborting its HTTP request when no chunk arrives for
 * `idleMs` (the time the caller spends on each chunk does not count). A stalled stream
 * then fails with a retryable ModelError instead of hanging the turn forever.
 *
 * `controller` is the stream's own abort controller (the `openai` Stream's `controller`),
 * whose abort ends the iteration quietly; the stall is reported here.
 */
export async function* idleTimeout<T>(
  stream: AsyncIterable<T>,
  controller: AbortController,
  idleMs: number,
): AsyncGenerator<T, void, undefined> {
  let stalled = false;
  // One timer for the whole stream, refreshed per chunk: a new timer per chunk is a
  // measurable cost when providers stream tens of thousands of chunks a second.
  let consuming = false;
  const timer = setTimeout(function onIdle() {
    if (consuming) {
      timer.refresh();
      return;
    }
    stalled = true;
    controller.abort();
  }, idleMs);
  const stallError = () =>
    new ModelError(`the model provider sent nothing for ${Math.round(idleMs / 1000)} s`, { retryable: true });
  try {
    for await (const item of stream) {
      if (stalled) break;
      consuming = true;
      yield item;
      consuming = false;
      timer.refresh();
    }
  } catch (err) {
    if (stalled) throw stallError();
    throw err;
  } finally {
    clearTimeout(timer);
  }
  if (stalled) throw stallError();
}
