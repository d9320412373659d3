/** The string `code` a thrown value carries (Node's `ENOENT`, SQLite's `SQLITE_BUSY`…), or undefined. */
export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

/** The first `code` along a thrown value's causes (undici puts the socket's `ECONNREFUSED` in `cause`). */
export function errorCodeInChain(error: unknown): string | undefined {
  for (let e = error, depth = 0; depth < 16; depth += 1) {
    const code = errorCode(e);
    if (code !== undefined) return code;
    if (typeof e !== 'object' || e === null || !('cause' in e)) return undefined;
    e = e.cause;
  }
  return undefined;
}
