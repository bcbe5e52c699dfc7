import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A throw-away self-signed certificate (and its key) in a temporary folder. */
export interface TestCertificate {
  readonly certPath: string;
  readonly keyPath: string;
  /** PEM bytes of the certificate: pass it as the trusted root to clients. */
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Deletes the folder. */
  cleanup(): Promise<void>;
}

/**
 * Makes a P-256 certificate valid for `localhost` and `127.0.0.1` (subjectAltName), so that
 * clients which verify host names (grpc-js, curl without -k) accept it when it is given as
 * their root. Uses the `openssl` command line tool, which must be on PATH.
 */
export async function createSelfSignedCert(): Promise<TestCertificate> {
  const dir = await mkdtemp(join(tmpdir(), "roz-tls-"));
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  try {
    await run("openssl", [
      "req",
      "-x509",
      "-nodes",
      "-days",
      "2",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost,IP:127.0.0.1",
      "-keyout",
      keyPath,
      "-out",
      certPath,
    ]);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const [cert, key] = await Promise.all([readFile(certPath), readFile(keyPath)]);
  return { certPath, keyPath, cert, key, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
