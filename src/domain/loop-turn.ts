/**
 * Resolves once the event loop has polled for I/O again, so that other clients' reads and
 * timers run before what follows. One `setImmediate` scheduled from an I/O callback fires in
 * the same loop iteration, before the loop polls again; the second hop fires in the next
 * iteration, after its timers and its poll.
 */
export function afterPendingIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}
