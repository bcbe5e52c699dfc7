export type PermissionPolicy = "allow" | "require_confirmation" | "deny";

/** A rule the server enforces; `toolPattern` is a glob over tool names. First match wins. */
export interface PermissionRule {
  toolPattern: string;
  policy: PermissionPolicy;
  category?: string;
  reason?: string;
}
