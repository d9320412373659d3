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

const show = (v: unknown) => (v === undefined ? '(unset)' : JSON.stringify(v));

/**
 * One line per change, `key: old → new`, for a person to read; a change the running host cannot take
 * without a restart ends in "(applies at restart)".
 */
export function formatDiff(changes: ConfigChange[]): string {
  if (changes.length === 0) return 'no change to the effective configuration';
  return changes
    .map(
      (c) =>
        `${c.key}: ${show(c.before)} → ${show(c.after)}${appliesAtRestart(c.key) ? ' (applies at restart)' : ''}`,
    )
    .join('\n');
}
