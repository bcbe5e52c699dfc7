/**
 * The header of an enveloped message in gRPC, gRPC-Web and the Connect streaming protocol:
 * a flags byte, then the message length as a big-endian u32.
 */
export const ENVELOPE_HEADER_BYTES = 5;

/** Writes an envelope header at `at` of `out`. */
export function writeEnvelopeHeader(out: Buffer, at: number, flags: number, length: number): void {
  out[at] = flags;
  out.writeUInt32BE(length, at + 1);
}
