/**
 * The layers of docs/architecture.md, checked by `npm run lint:layers` (and CI): every import
 * of production code must match one `allowed` rule, anything else is an error, and no import
 * cycle is allowed anywhere.
 *
 * `tiers` lists the folders from the top (the composition root) down to the leaves. Each
 * folder has one rule set, `imports`: the folders it may import besides itself, each of a
 * lower tier. The sets name only what the code imports today: a new arrow is a decision,
 * written here. `src/gen` (code generated from proto/) is a leaf only src/rpc and src/app
 * read: no protobuf type below src/rpc, and routes/ leave protobuf JSON to src/rpc.
 * `web/` is a separate client: only its own modules and the client library `packages/client`
 * (`@roz/client`), which is self-contained: its own modules, its own generated code and npm.
 * Of the server's folders only src/cli may use the library (`client`: `roz chat`).
 */
const tiers = [
  ["main"],
  ["cli"],
  ["app"],
  ["transport", "rpc", "routes", "cluster"],
  ["session", "teams", "auth", "mcp", "telemetry"],
  ["agent"],
  ["models", "store", "bus"],
  ["domain", "errors", "gen", "client"],
];

const imports = {
  main: ["app", "cli", "errors"],
  cli: ["app", "auth", "store", "errors", "client"],
  app: ["transport", "rpc", "routes", "cluster", "session", "teams", "auth", "mcp", "telemetry", "agent", "models", "store", "bus", "errors", "gen"],
  transport: ["domain", "errors"],
  rpc: ["session", "teams", "mcp", "agent", "models", "store", "domain", "errors", "gen"],
  routes: ["session", "teams", "auth", "mcp", "agent", "models", "store", "domain", "errors"],
  cluster: ["session", "bus", "errors"],
  session: ["agent", "models", "store", "domain", "errors"],
  teams: ["agent", "models", "store", "bus", "errors"],
  auth: ["store", "domain", "errors"],
  mcp: ["agent", "models", "store", "errors"],
  telemetry: ["models", "domain"],
  agent: ["models", "domain", "errors"],
  models: ["domain", "errors"],
  store: ["domain", "errors"],
  bus: ["domain", "errors"],
  domain: [],
  errors: [],
  gen: [],
  client: [],
};

const tierOf = new Map(tiers.flatMap((folders, tier) => folders.map((folder) => [folder, tier])));
for (const [folder, targets] of Object.entries(imports)) {
  for (const target of targets) {
    if (!(tierOf.get(target) > tierOf.get(folder))) throw new Error(`.dependency-cruiser.cjs: ${folder} may not import ${target}, which is not below it`);
  }
}

/** The path pattern of a folder's files: routes/, src/main.ts and the client library sit outside src/<folder>/. */
const outside = { routes: "^routes/", main: "^src/main\\.ts$", client: "^packages/client/" };
const pathOf = (folder) => outside[folder] ?? `^src/${folder}/`;
const anyOf = (folders) => folders.map(pathOf).join("|");

module.exports = {
  allowed: [
    // npm dependencies (not devDependencies) and Node's own modules
    { from: { path: "^(src|routes)/" }, to: { dependencyTypes: ["npm", "core"] } },
    { from: { path: "^web/" }, to: { dependencyTypes: ["npm", "npm-dev", "core"] } },
    { from: { path: "^packages/client/" }, to: { dependencyTypes: ["npm", "npm-peer", "core"] } },
    { from: { path: "^packages/client/" }, to: { path: "^packages/client/" } },
    // within a folder
    { from: { path: "^src/([^/]+)/" }, to: { path: "^src/$1/" } },
    { from: { path: "^routes/" }, to: { path: "^routes/" } },
    { from: { path: "^web/" }, to: { path: "^(web|packages/client/src)/" } },
    ...Object.entries(imports)
      .filter(([, targets]) => targets.length > 0)
      .map(([folder, targets]) => ({ from: { path: pathOf(folder) }, to: { path: anyOf(targets) } })),
  ],
  allowedSeverity: "error",
  forbidden: [
    { name: "no-unresolvable", severity: "error", from: {}, to: { couldNotResolve: true } },
    { name: "no-cycle", severity: "error", from: { path: "^(src|routes|web|packages)/" }, to: { circular: true } },
  ],
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
// For test/layers.test.ts (every arrow is used by the code); not enumerable, since
// dependency-cruiser refuses keys of its configuration it does not know.
Object.defineProperty(module.exports, "layers", { value: { tiers, imports, pathOf } });
