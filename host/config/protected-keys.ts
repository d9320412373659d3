import { configEffects } from './config-effects.ts';
import type { HostConfig } from './schema.ts';
import { formatConfigPath, type ConfigPath, type PatchEntry } from './toml-edit.ts';

/**
 * The keys an agent may never propose changing, in one place: they steer where credentials go, what a
 * container can reach or see, and who the owner is. The owner changes them in the file or with
 * `carapace config set`. `*` matches one key; a pattern also covers everything under it.
 */
export const PROTECTED_KEYS: readonly { pattern: ConfigPath; why: string }[] = [
  { pattern: ['provider', 'base_url'], why: 'where the real provider key is sent' },
  { pattern: ['provider', 'api_key_env'], why: 'which secret is used as the provider key' },
  {
    pattern: ['media', 'transcription', 'base_url'],
    why: 'where voice notes and the transcription key are sent',
  },
  { pattern: ['media', 'transcription', 'api_key_env'], why: 'which secret is the transcription key' },
  {
    pattern: ['media', 'transcription', 'price_per_minute_usd'],
    why: 'what transcription counts against the spend cap (0 lifts the cap for it)',
  },
  { pattern: ['security'], why: 'the security policy itself' },
  { pattern: ['services'], why: 'service trust declarations' },
  { pattern: ['credentials'], why: 'where a secret is sent and what a container may do with it' },
  { pattern: ['containers'], why: 'how agent containers are isolated' },
  { pattern: ['runner'], why: 'where agent containers run and which cluster identity starts them' },
  { pattern: ['groups', '*', 'extra_mounts'], why: 'host folders a container can see' },
  { pattern: ['channels', '*', 'owner_user_id'], why: 'who the owner is' },
  {
    pattern: ['channels', '*', 'credentials'],
    why: "which credentials every group of the account may use (a group's own list is asked for, per group)",
  },
  { pattern: ['channels', '*', 'bot_token_env'], why: 'which secret is the channel token' },
  { pattern: ['channels', '*', 'api_root'], why: 'where the channel token is sent' },
  { pattern: ['channels', '*', 'websocket_url'], why: 'where the channel session is sent' },
  { pattern: ['channels', '*', 'webhook'], why: 'where the channel receives messages and its secret' },
];

/**
 * A path into a named account's table read as a path into a channel's table, so the channel patterns cover
 * every account: `channels.telegram.work.owner_user_id` is `channels.telegram.owner_user_id`, and the whole
 * `channels.telegram.work` (a new account, its token variable included) is `channels.telegram`, which
 * every channel pattern overlaps.
 */
function accountPath(path: ConfigPath, before: HostConfig, after: HostConfig): ConfigPath {
  const [section, channel, account] = path;
  if (section !== 'channels' || channel === undefined || account === undefined) return path;
  const label = `${channel}.${account}`;
  if (before.channels[label] === undefined && after.channels[label] === undefined) return path;
  return [section, channel, ...path.slice(3)];
}

export interface ProtectedTouch {
  key: string;
  why: string;
}

/** Patterns match a path, anything under it, or a table above it (setting `groups.x` may set its mounts). */
function overlaps(path: ConfigPath, pattern: ConfigPath): boolean {
  const n = Math.min(path.length, pattern.length);
  for (let i = 0; i < n; i++) if (pattern[i] !== '*' && pattern[i] !== path[i]) return false;
  return true;
}

/**
 * Which parts of a patch touch protected keys, or have an effect only the owner may bring about by hand
 * (config-effects.ts), given the effective config before and after it: an empty list means an agent may
 * propose it (the owner still approves, told of any effect that needs their eyes).
 */
export function protectedTouches(
  patch: PatchEntry[],
  before: HostConfig,
  after: HostConfig,
): ProtectedTouch[] {
  const touches: ProtectedTouch[] = [];
  for (const { path } of patch) {
    const asAccount = accountPath(path, before, after);
    for (const { pattern, why } of PROTECTED_KEYS) {
      if (overlaps(asAccount, pattern)) touches.push({ key: formatConfigPath(path), why });
    }
  }
  // An effect already named by the key that causes it is said once, by the key.
  const named = (key: string) => touches.some((t) => t.key.startsWith(key) || key.startsWith(t.key));
  for (const e of configEffects(before, after))
    if (e.verdict === 'refuse' && !named(e.key)) touches.push({ key: e.key, why: e.effect });
  return touches;
}
