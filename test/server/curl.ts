import { execFile } from "node:child_process";

/** Which HTTP curl speaks: `1.1`, h2c prior knowledge, or HTTP/2 over TLS via ALPN. */
export type CurlHttp = "1.1" | "h2c" | "h2";

export interface CurlResult {
  status: number;
  /** As curl reports it: `1.1` or `2`. */
  httpVersion: string;
  contentType: string;
  /** Response headers by lower-case name (last value wins). */
  headers: Record<string, string>;
  body: string;
}

const MARK = "\n@@curl-meta@@";
const HEADERS_MARK = "\n@@curl-headers@@";

/**
 * Runs the `curl` command line tool against `url` and returns status, negotiated HTTP
 * version, content type and body. Rejects when curl itself fails (connection refused, TLS).
 */
export function curl(
  url: string,
  http: CurlHttp,
  options: { insecure?: boolean; method?: string; headers?: Record<string, string>; data?: string; timeoutMs?: number } = {},
): Promise<CurlResult> {
  const args = ["-sS", "--max-time", String(Math.ceil((options.timeoutMs ?? 10_000) / 1000)), "-w", `${MARK}%{json}${HEADERS_MARK}%{header_json}`];
  args.push(http === "1.1" ? "--http1.1" : http === "h2c" ? "--http2-prior-knowledge" : "--http2");
  if (options.insecure) args.push("-k");
  if (options.method) args.push("-X", options.method);
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push("-H", `${name}: ${value}`);
  if (options.data !== undefined) args.push("--data-binary", options.data);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile("curl", args, { encoding: "utf8", timeout: (options.timeoutMs ?? 10_000) + 5_000 }, (error, stdout, stderr) => {
      const at = stdout.lastIndexOf(MARK);
      if (error || at < 0) {
        reject(new Error(`curl ${args.join(" ")} failed: ${error?.message ?? ""} ${stderr}`));
        return;
      }
      const tail = stdout.slice(at + MARK.length);
      const split = tail.indexOf(HEADERS_MARK);
      const meta = JSON.parse(tail.slice(0, split)) as { response_code: number; http_version: string; content_type: string | null };
      const rawHeaders = JSON.parse(tail.slice(split + HEADERS_MARK.length)) as Record<string, string[]>;
      const headers = Object.fromEntries(Object.entries(rawHeaders).map(([name, values]) => [name.toLowerCase(), values.at(-1) ?? ""]));
      resolve({ status: meta.response_code, httpVersion: meta.http_version, contentType: meta.content_type ?? "", headers, body: stdout.slice(0, at) });
    });
  });
}
