import { isDeepStrictEqual } from 'node:util';
import { appliesAtRestart } from './reload-scope.ts';
import { formatConfigPath } from './toml-edit.ts';

export interface ConfigChange {
  key: string;
  before: unknown;
  after: unknown;
}

function leaves(value: unknown, path: string[], out: Map<string, unknown>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date)) {
    for (const [k, v] of Object.entries(value)) leaves(v, [...path, k], out);
  } else if (value !== undefined) out.set(formatConfigPath(path), value);
}

/** Every leaf key whose effective value differs (defaults applied on both sides), in key order. */
export function diffConfigs(before: unknown, after: unknown): ConfigChange[] {
  const a = new Map<string, unknown>();
  const b = new Map<string, unknown>();
  leaves(before, [], a);
  leaves(after, [], b);
  return [...new Set([...a.keys(), ...b.keys()])]
    .sort()
    .filter((key) => !isDeepStrictEqual(a.get(key), b.get(key)))
    .map((key) => ({ key, before: a.get(key), after: b.get(key) }));
}

/**
 * A URL's password and query values hidden (`wss://user:***@host/ws?token=***`): a changed `websocket_url`
 * or `base_url` may carry an access token, and these lines go to admin chats, logs and terminals.
 */
export function hideUrlCredentials(value: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return value;
  }
  if (!url.password && !url.search) return value;
  if (url.password) url.password = '***';
  for (const key of [...url.searchParams.keys()]) url.searchParams.set(key, '***');
  // URLSearchParams encodes the stars; shown as written.
  return url.toString().replaceAll('%2A%2A%2A', '***');
}

const show = (v: unknown) =>
  v === undefined ? '(unset)' : JSON.stringify(typeof v === 'string' ? hideUrlCredentials(v) : v);

/**
 * One line per change, `key: old → new`, for a person to read; a change the running host cannot take
 * without a restart ends in "(applies at restart)".
 */
export function formatDiff(changes: ConfigChange[], alsoLive: readonly (readonly string[])[] = []): string {
  if (changes.length === 0) return 'no change to the effective configuration';
  return changes
    .map(
      (c) =>
        `${c.key}: ${show(c.before)} → ${show(c.after)}${appliesAtRestart(c.key, alsoLive) ? ' (applies at restart)' : ''}`,
    )
    .join('\n');
}
