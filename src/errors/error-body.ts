/** The JSON body of every REST error: `{"error":{"code","message","details?"}}`. */
export function errorBody(code: string, message: string, details?: Record<string, unknown>) {
  return { error: { code, message, ...(details ? { details } : {}) } };
}
