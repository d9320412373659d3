export interface BackoffPolicy {
  /** The delay before the first retry (attempt 0). */
  baseMs: number;
  /** No delay is longer than this. */
  maxMs?: number;
  /**
   * Spread of the delay, as a fraction: 0.25 draws it from ±25 % around the exponential value, so retries
   * from several callers do not arrive in step. Default 0.
   */
  jitter?: number;
  random?: () => number;
}

/** Exponents above this would overflow to Infinity long before any cap matters. */
const MAX_EXPONENT = 30;

/** Exponential backoff: `baseMs` × 2^attempt, capped at `maxMs`, then spread by `jitter`. */
export function backoffMs(attempt: number, policy: BackoffPolicy): number {
  const exponent = Math.min(Math.max(attempt, 0), MAX_EXPONENT);
  const delay = Math.min(policy.maxMs ?? Infinity, policy.baseMs * 2 ** exponent);
  const jitter = policy.jitter ?? 0;
  if (jitter === 0) return Math.round(delay);
  return Math.round(delay * (1 - jitter + 2 * jitter * (policy.random ?? Math.random)()));
}
