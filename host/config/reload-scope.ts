/**
 * The keys a running host applies without a restart, in one place: each is read from the config source
 * at use (the next message, run, request or fetch), never captured at start. Everything else — the
 * provider, containers, channels and their credentials, ports, the queue's sizes, the security policy —
 * is built once at start and "applies at restart". Fail closed: a key not listed here is one of those.
 * `*` matches one key; a pattern also covers everything under it.
 */
export const LIVE_KEYS: readonly (readonly string[])[] = [
  ['assistant', 'name'],
  ['assistant', 'timezone'],
  ['assistant', 'persona'],
  // An account's defaults for its groups (config/group-defaults.ts reads them at each run and request);
  // diff keys name an account by its label, so one `*` covers `telegram` and `telegram.work`.
  ['channels', '*', 'persona'],
  ['channels', '*', 'daily_cap_usd'],
  ['channels', '*', 'credentials'],
  ['groups', '*', 'persona'],
  ['admin', 'notify'],
  ['admin', 'daily_summary'],
  ['groups', '*', 'trigger'],
  ['groups', '*', 'allowed_senders'],
  ['groups', '*', 'services'],
  ['groups', '*', 'contains_secrets'],
  ['groups', '*', 'extra_mounts'],
  ['groups', '*', 'credentials'],
  ['groups', '*', 'git_name'],
  ['groups', '*', 'git_email'],
  ['credentials'],
  ['runs', 'max_tool_steps'],
  ['runs', 'wall_time_ms'],
  ['gateway', 'daily_cap_usd'],
  ['gateway', 'group_caps_usd'],
  ['gateway', 'allowed_models'],
  ['gateway', 'prices'],
  ['gateway', 'max_request_bytes'],
  ['gateway', 'slow_notice_ms'],
  ['web_fetch'],
  ['media'],
  ['groups', '*', 'transcribe'],
];

/** Splits a diff key (`groups.family.trigger`, `gateway.prices."gpt-4o".input_per_mtok_usd`) into its parts. */
function keyParts(key: string): string[] {
  const parts: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|([^.]+)/g;
  for (const m of key.matchAll(re))
    parts.push(m[1] !== undefined ? (JSON.parse(`"${m[1]}"`) as string) : (m[2] ?? ''));
  return parts;
}

function covers(pattern: readonly string[], parts: string[]): boolean {
  if (parts.length < pattern.length) return false;
  return pattern.every((p, i) => p === '*' || p === parts[i]);
}

/**
 * Whether a changed key (as config-diff names it) only takes effect when the host starts again. `alsoLive`
 * are patterns live for this one change only: a channel account added or removed whole (its channel is
 * started or stopped) where an edit of a running account's settings waits for the restart.
 */
export function appliesAtRestart(key: string, alsoLive: readonly (readonly string[])[] = []): boolean {
  const parts = keyParts(key);
  return ![...LIVE_KEYS, ...alsoLive].some((pattern) => covers(pattern, parts));
}

/** The keys of a diff that wait for a restart. */
export function restartKeys(
  changes: readonly { key: string }[],
  alsoLive: readonly (readonly string[])[] = [],
): string[] {
  return changes.filter((c) => appliesAtRestart(c.key, alsoLive)).map((c) => c.key);
}
