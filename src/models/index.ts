export * from "./types.ts";
export { ModelError } from "./model-error.ts";
