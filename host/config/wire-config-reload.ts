import type { Logger } from '../logging/logger.ts';
import type { AdminChats } from '../admin/admin-chats.ts';
import { adminGroupId } from '../admin/admin-group.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import { formatProblem } from './config-error.ts';
import { createConfigFileStore } from './config-file-store.ts';
import { createConfigHealth } from './config-health.ts';
import { createConfigReloader, type ConfigReloader } from './config-reloader.ts';
import type { ConfigSource } from './config-source.ts';
import { watchConfigFile } from './config-watch.ts';
import { createReloadCheck } from './reload-check.ts';
import { safeModeNotice, saveLastGood, type StartConfig } from './safe-start.ts';

/** A host that runs on config.toml and applies its changes while it runs (`carapace start`). */
export interface ConfigFileReload {
  /** What the start read (the file, or the last good copy in safe mode). */
  start: StartConfig;
  exampleFile: string;
  /** Quiet time after an edit of the file before it is read (default 300 ms). */
  watchDebounceMs?: number;
}

export interface ConfigReloadWiringDeps {
  configFile: string;
  reload: ConfigFileReload;
  source: ConfigSource;
  groups: Pick<GroupsStore, 'admin'>;
  /** Each started channel's name and state, for the health check after a change. */
  channelStates(): Iterable<{ name: string; state: string }>;
  adminChats: Pick<AdminChats, 'notify' | 'linked'>;
  /** A change applied (a pre-started container made under the old config is replaced now). */
  onApplied(): void;
  logger: Logger;
}

/**
 * config.toml applied while the host runs: read again on every edit of the file, checked, applied to the
 * config source, the host's health checked after, and announced. A start in safe mode tells the owner;
 * a good start saves the file as the last good copy. Returns the reloader and the stop of the watch.
 */
export function wireConfigReload(deps: ConfigReloadWiringDeps): { reloader: ConfigReloader; stop(): void } {
  const { configFile, reload, adminChats, logger } = deps;
  const live = deps.source.current;
  const reloader = createConfigReloader({
    store: createConfigFileStore({ configFile }),
    source: deps.source,
    check: createReloadCheck({
      configFile,
      exampleFile: reload.exampleFile,
      adminGroupId: () => adminGroupId(deps.groups),
    }),
    health: createConfigHealth({
      channels: deps.channelStates,
      adminChats: () => adminChats.linked(),
      notifyChannels: () => live().admin.notify,
    }),
    announce: (key, text) => adminChats.notify(key, text),
    saveLastGood: (applied) => saveLastGood(configFile, applied),
    onApplied: () => deps.onApplied(),
    logger: logger.child({ subsystem: 'config' }),
  });
  const stop = watchConfigFile({
    configFile,
    ...(reload.watchDebounceMs === undefined ? {} : { debounceMs: reload.watchDebounceMs }),
    onChange: () => void reloader.reload('file'),
    onError: (err) =>
      logger.error({ err }, 'config file watch failed; changes need carapace config set or a restart'),
  });
  const safe = reload.start.safeMode;
  if (safe) {
    const problems = safe.problems.map(formatProblem);
    logger.error({ problems, runningOn: safe.lastGoodFile }, 'config file invalid; running in safe mode');
    adminChats.notify(
      `config:safe-mode:${reload.start.applied.hash.slice(0, 12)}:${Date.now()}`,
      safeModeNotice(configFile, safe, problems),
    );
  } else saveLastGood(configFile, reload.start.applied);
  return { reloader, stop };
}
