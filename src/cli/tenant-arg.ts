/** A tenant name as `roz keys` and `roz budgets` take it: letters, digits, ".", "_" or "-", at most 63. */
const TENANT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;

/** `--tenant`'s value, checked; `usage` throws the command's usage error. */
export function tenantArgument(value: string | undefined, usage: (message: string) => never): string {
  if (value === undefined) return usage("--tenant is required");
  if (!TENANT.test(value)) return usage(`--tenant "${value}": use letters, digits, ".", "_" or "-" (at most 63)`);
  return value;
}
