/** Who is calling: resolved from the bearer key (or the open-mode principal). */
export interface Principal {
  tenantId: string;
  keyId?: string;
  scopes: readonly string[];
}
