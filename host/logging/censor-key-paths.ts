/** What a censored field's value becomes in a log line. */
export const CENSOR = '[REDACTED]';

/** Fields censored wherever they sit one level down a log line's details (`{ config: { apiKey } }`). */
const CENSORED_KEYS = ['apiKey', 'api_key', 'token', 'authorization', 'password'] as const;

/**
 * The details of a log line (or a child's bindings) with the value of every field named in CENSORED_KEYS,
 * one level down, and of `headers.authorization` there, replaced by CENSOR. The object given is never
 * changed: a holder with such a field is copied (its prototype and own properties kept, so an Error stays an
 * Error), and the details are returned as they are when nothing is censored, which is nearly always.
 *
 * pino's own `redact` with wildcard paths (`*.apiKey`) did the same by running a redacting stringifier on
 * every value of every line, a string or a number too: most of the cost of the gateway's one line per
 * request (DESIGN.md, "LLM gateway").
 */
export function censorKeyPaths<T extends object>(details: T): T {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(details)) {
    const value = (details as Record<string, unknown>)[key];
    if (typeof value !== 'object' || value === null) continue;
    const censored = censorHolder(value);
    if (censored !== value) (out ??= { ...(details as Record<string, unknown>) })[key] = censored;
  }
  return (out as T | undefined) ?? details;
}

function censorHolder(holder: object): object {
  let copy: Record<string, unknown> | undefined;
  for (const key of CENSORED_KEYS) if (Object.hasOwn(holder, key)) (copy ??= copyOf(holder))[key] = CENSOR;
  const headers = (holder as Record<string, unknown>).headers;
  if (typeof headers === 'object' && headers !== null && Object.hasOwn(headers, 'authorization'))
    (copy ??= copyOf(holder)).headers = { ...copyOf(headers), authorization: CENSOR };
  return copy ?? holder;
}

function copyOf(value: object): Record<string, unknown> {
  return Object.create(
    Object.getPrototypeOf(value) as object | null,
    Object.getOwnPropertyDescriptors(value),
  ) as Record<string, unknown>;
}
