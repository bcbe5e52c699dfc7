import type { ModelAdapter, ModelCatalog, ResolvedModel } from "./types.ts";

/**
 * `catalog` whose resolved models speak through `wrap(adapter)`: one wrapper per adapter,
 * made on first use (metrics time the calls this way, tracing makes spans of them).
 */
export function wrapAdapters(catalog: ModelCatalog, wrap: (adapter: ModelAdapter) => ModelAdapter): ModelCatalog {
  const wrapped = new WeakMap<ModelAdapter, ModelAdapter>();
  return {
    get defaultModel() {
      return catalog.defaultModel;
    },
    get offline() {
      return catalog.offline;
    },
    providers: () => catalog.providers(),
    resolve(name): ResolvedModel | undefined {
      const model = catalog.resolve(name);
      if (!model) return undefined;
      let adapter = wrapped.get(model.adapter);
      if (!adapter) {
        adapter = wrap(model.adapter);
        wrapped.set(model.adapter, adapter);
      }
      return { ...model, adapter };
    },
  };
}
