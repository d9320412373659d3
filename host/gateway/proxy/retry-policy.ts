import type { IncomingHttpHeaders } from 'node:http';

/** 429 (rate limited) and any 5xx, including Anthropic's 529 "overloaded". */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The delay a provider asked for: OpenAI's `retry-after-ms`, then `retry-after` as seconds or an HTTP
 * date. Undefined when absent or unreadable.
 */
export function retryAfterMs(headers: IncomingHttpHeaders, nowMs: number): number | undefined {
  const ms = Number(single(headers['retry-after-ms']));
  if (single(headers['retry-after-ms']) !== undefined && Number.isFinite(ms) && ms >= 0) return Math.ceil(ms);
  const raw = single(headers['retry-after'])?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number(raw) * 1000);
  const date = Date.parse(raw);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

/** Retries of the upstream spread ±25 % so retries from several runs do not arrive in step. */
export const UPSTREAM_RETRY_JITTER = 0.25;
