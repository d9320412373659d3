import { parse as parseToml } from 'smol-toml';
import { diffConfigs, type ConfigChange } from './config-diff.ts';
import type { ConfigFileStore } from './config-file-store.ts';
import { hostConfigSchema } from './schema.ts';

/** The effective config of a file's text (defaults applied), or its raw parse when it is not valid. */
export function effectiveConfig(text: string): unknown {
  const raw = parseToml(text);
  const parsed = hostConfigSchema.safeParse(raw);
  return parsed.success ? parsed.data : raw;
}

export interface HistoryEntry {
  /** 1 is the newest backup: what `config rollback <n>` takes. */
  n: number;
  replacedAt: string;
  /** The keys the change that replaced it made; undefined when that version is no longer kept. */
  keys: string[] | undefined;
}

/** `carapace config history` and the web console's Config page: each backup, newest first. */
export function configHistory(store: ConfigFileStore): HistoryEntry[] {
  const entries = store.history();
  // What replaced a backup is the next newer backup, or the file itself for the newest; found by hash.
  const current = store.read();
  const texts = new Map<string, () => string>([[current.hash, () => current.text]]);
  for (const b of entries) texts.set(b.hash, () => store.backupText(b));
  return entries.map((b, i) => {
    const next = texts.get(b.replacedBy);
    return {
      n: i + 1,
      replacedAt: b.replacedAt,
      keys: next
        ? diffConfigs(effectiveConfig(store.backupText(b)), effectiveConfig(next())).map((c) => c.key)
        : undefined,
    };
  });
}

/** "assistant.name, runs.max_attempts" (at most four named), or why there is nothing to name. */
export function describeHistoryKeys(keys: string[] | undefined): string {
  if (keys === undefined) return 'replaced by a version no longer kept';
  if (keys.length === 0) return 'no change to the effective configuration';
  return keys.length > 4 ? `${keys.slice(0, 4).join(', ')} and ${keys.length - 4} more` : keys.join(', ');
}

/** The file against its newest backup (`config diff`); undefined before the first backup. */
export function lastConfigChange(
  store: ConfigFileStore,
): { replacedAt: string; changes: ConfigChange[] } | undefined {
  const [last] = store.history();
  if (!last) return undefined;
  return {
    replacedAt: last.replacedAt,
    changes: diffConfigs(effectiveConfig(store.backupText(last)), effectiveConfig(store.read().text)),
  };
}

export type RollbackPlan =
  | { ok: true; text: string; baseHash: string; changes: ConfigChange[] }
  | { ok: false; why: 'no-such-backup' | 'invalid'; message: string };

/**
 * What `config rollback <n>` would write: backup n's text if it is a valid configuration for this version,
 * the hash of the file it replaces (so the write refuses a file changed meanwhile) and the effective diff.
 */
export function planRollback(store: ConfigFileStore, n: number): RollbackPlan {
  const entries = store.history();
  const backup = Number.isInteger(n) && n >= 1 ? entries[n - 1] : undefined;
  if (!backup)
    return {
      ok: false,
      why: 'no-such-backup',
      message: `there are ${entries.length} backups; carapace config history lists them`,
    };
  const text = store.backupText(backup);
  const parsed = hostConfigSchema.safeParse(parseToml(text));
  if (!parsed.success)
    return {
      ok: false,
      why: 'invalid',
      message: `backup ${n} is not a valid configuration for this version of carapace; not restored`,
    };
  const current = store.read();
  return {
    ok: true,
    text,
    baseHash: current.hash,
    changes: diffConfigs(effectiveConfig(current.text), parsed.data),
  };
}
