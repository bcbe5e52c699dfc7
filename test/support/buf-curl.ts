// The real `buf curl` (from @bufbuild/buf), run with this process's Node 24, over gRPC with
// h2c prior knowledge and the schema from the server's reflection.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const run = promisify(execFile);
// The npm package's launcher script.
const bufScript = fileURLToPath(new URL("../../node_modules/@bufbuild/buf/bin/buf", import.meta.url));

/** `buf curl --http2-prior-knowledge --protocol grpc ...args`: its stdout; a failed call rejects with `stderr` and `code`. */
export async function bufCurl(args: string[], timeoutMs = 30_000): Promise<string> {
  const { stdout } = await run(process.execPath, [bufScript, "curl", "--http2-prior-knowledge", "--protocol", "grpc", ...args], { timeout: timeoutMs });
  return stdout;
}

/** buf curl's output for a stream: one pretty-printed JSON object per message. */
export function bufCurlMessages<T>(stdout: string): T[] {
  return stdout
    .trim()
    .split(/\n(?=\{)/)
    .map((text) => JSON.parse(text) as T);
}
