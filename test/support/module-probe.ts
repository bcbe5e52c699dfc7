/**
 * Loaded with `--import` into a server process (NODE_OPTIONS): appends to the file named by
 * `MODULE_PROBE_FILE` every module of `@opentelemetry/*` the process resolves, so that a test
 * can tell whether tracing code was loaded at all.
 */
import { appendFileSync } from "node:fs";
import { registerHooks } from "node:module";

const file = process.env.MODULE_PROBE_FILE;
const seen = new Set<string>();
if (file !== undefined) {
  registerHooks({
    resolve(specifier, context, next) {
      const resolved = next(specifier, context);
      if (resolved.url.includes("/@opentelemetry/") && !seen.has(resolved.url)) {
        seen.add(resolved.url);
        appendFileSync(file, `${resolved.url}\n`);
      }
      return resolved;
    },
  });
}
