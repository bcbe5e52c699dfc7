/**
 * The layer arrows of DESIGN.md, checked by `npm run lint:layers` (and CI): every import of
 * production code must match one `allowed` rule, anything else is an error.
 *
 *   routes/, src/rpc ─► src/app ─► src/session ─► src/agent ─► src/models ─► src/store
 *                                 └► src/teams ──┘  (and ─► src/bus)
 *
 * `src/teams` sits beside `src/session`: its workers run the one agent loop of src/agent, and
 * the two talk only through a narrow port that src/app wires (neither imports the other).
 * A layer may import the layers its arrows reach (directly or through others), never one
 * above it. `src/app` is the composition root: it also wires routes/ and src/rpc.
 * `src/store` and `src/bus` are the bottom; `src/teams` keeps its task records in the store.
 * Leaves below everything: `src/domain` (records shared by several layers: a turn, a
 * permission rule, token usage; and the runtime helper they share: waiting for the loop's
 * next poll) and `src/errors`. `src/transport` (the one port and its guards) is wired by
 * src/app and imports only the leaves. Code generated from proto/ (`src/gen`)
 * is for src/rpc and src/app only: no protobuf type below src/rpc, and routes/ leave protobuf
 * JSON to src/rpc.
 * Not drawn in DESIGN.md: `src/auth` (API keys; used by app, routes and the CLI, it uses the
 * session's principal and the store), `src/cli` and `src/main.ts` (entry points, app tier).
 * `web/` is a separate client: only its own modules and the generated code.
 */
const below = {
  session: ["agent", "models", "store", "bus"],
  teams: ["agent", "models", "store", "bus"],
  agent: ["models", "store"],
  models: ["store"],
  store: [],
  bus: [],
};
const appTier = ["app", "rpc", "auth", "cli", "session", "teams", ...below.session, "gen"];
/** Folders under src/ each layer may import, besides itself and the leaves. */
const layers = {
  app: [...appTier, "transport", "cluster", "ROUTES"],
  cli: appTier,
  rpc: appTier,
  auth: ["session", ...below.session],
  // node-to-node routing and relay over the bus (DESIGN.md: beside src/rpc, above src/session)
  cluster: ["session", "bus"],
  transport: [],
  ...below,
  domain: [],
  errors: [],
  gen: [],
};
const leaves = ["domain", "errors"];
const srcPath = (folders) => `^src/(${folders.join("|")})/`;

module.exports = {
  allowed: [
    // npm dependencies (not devDependencies) and Node's own modules
    { from: { path: "^(src|routes)/" }, to: { dependencyTypes: ["npm", "core"] } },
    { from: { path: "^web/" }, to: { dependencyTypes: ["npm", "npm-dev", "core"] } },
    // within a layer
    { from: { path: "^src/([^/]+)/" }, to: { path: "^src/$1/" } },
    { from: { path: "^routes/" }, to: { path: "^routes/" } },
    { from: { path: "^web/" }, to: { path: "^(web|src/gen)/" } },
    // entry point
    { from: { path: "^src/main\\.ts$" }, to: { path: srcPath(["app", "cli", ...leaves]) } },
    // routes/: the app tier, except generated code: protobuf encoding is src/rpc's work
    { from: { path: "^routes/" }, to: { path: srcPath([...appTier.filter((l) => l !== "gen"), ...leaves]) } },
    ...Object.entries(layers).map(([layer, may]) => ({
      from: { path: `^src/${layer}/` },
      to: { path: may.includes("ROUTES") ? `^routes/|${srcPath([...may.filter((l) => l !== "ROUTES"), ...leaves])}` : srcPath([...may, ...leaves]) },
    })),
  ],
  allowedSeverity: "error",
  forbidden: [{ name: "no-unresolvable", severity: "error", from: {}, to: { couldNotResolve: true } }],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "\\.d\\.ts$" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      extensions: [".ts", ".js", ".d.ts"],
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "types", "default"],
      mainFields: ["module", "main", "types"],
    },
  },
};
