import { formatProblem } from './config-error.ts';
import { diffConfigs, formatDiff, type ConfigChange } from './config-diff.ts';
import { StaleConfigError, type ConfigFileStore } from './config-file-store.ts';
import type { AppliedConfig, ConfigSource } from './config-source.ts';
import type { CheckedConfigText } from './load-config.ts';
import { restartKeys } from './reload-scope.ts';
import { accountsAddedOrRemoved } from '../channels/channel-accounts.ts';
import type { Logger } from '../logging/logger.ts';

/** Who asked for the reload: a change of the file seen by the watcher, the CLI, or an approved proposal. */
export type ReloadTrigger = 'file' | 'cli' | 'proposal' | 'web';

export type ReloadOutcome =
  | { kind: 'unchanged'; hash: string }
  | { kind: 'applied'; hash: string; changes: ConfigChange[]; atRestart: string[] }
  /** The file is not a valid configuration: the running one stays. */
  | { kind: 'refused'; hash: string; problems: string[] }
  /** Applied, then the health check failed: the previous file was written back and runs again. */
  | { kind: 'rolled-back'; hash: string; problems: string[] };

export interface ConfigReloader {
  /** Reads config.toml and applies it if it changed and is valid; calls run one after another. */
  reload(trigger: ReloadTrigger): Promise<ReloadOutcome>;
}

/** What "the host still works" means after a change, measured before and after it. */
export interface ConfigHealth<Snapshot = unknown> {
  snapshot(): Snapshot;
  /** One line per thing that worked before and does not now; empty when healthy. */
  problems(before: Snapshot): Promise<string[]>;
}

export interface ConfigReloaderDeps<Snapshot> {
  store: Pick<ConfigFileStore, 'configFile' | 'read' | 'write'>;
  source: ConfigSource;
  /** The start's own check of a file's text (checkConfigText bound to the file and the example). */
  check(text: string): CheckedConfigText;
  health: ConfigHealth<Snapshot>;
  /** A notice to the owner's admin chats; `key` is unique per event. */
  announce(key: string, text: string): void;
  /** A config that ran and passed the health check: the one a broken file falls back to at the next start. */
  saveLastGood(applied: AppliedConfig): void;
  /**
   * A change was applied and kept: what the host made from the old config (containers started ahead of
   * their runs, with the old time zone or mounts) is made anew.
   */
  onApplied?(changes: ConfigChange[]): void;
  logger: Pick<Logger, 'info' | 'warn'>;
  now?: () => number;
}

const short = (hash: string) => hash.slice(0, 12);

const BY: Record<ReloadTrigger, string> = {
  file: 'an edit of config.toml',
  cli: 'carapace config',
  proposal: 'an approved proposal',
  web: 'the web console',
};

/**
 * Brings a changed config.toml into the running host: checked like a start (an invalid file is refused,
 * one line per problem, and the running config stays), applied through the config source, then the health
 * check; when that fails the previous file is written back and runs again. Every outcome but "unchanged"
 * is told in the admin chats: the owner never finds a change silently applied, refused or undone.
 */
export function createConfigReloader<S>(deps: ConfigReloaderDeps<S>): ConfigReloader {
  const now = deps.now ?? Date.now;
  // The watcher sees one edit as several events: an invalid version is announced once.
  let refusedHash: string | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  const announce = (kind: string, hash: string, text: string) =>
    deps.announce(`config:${kind}:${short(hash)}:${now()}`, text);

  async function reloadNow(trigger: ReloadTrigger): Promise<ReloadOutcome> {
    const file = deps.store.read();
    const previous = deps.source.applied();
    if (file.hash === previous.hash) {
      refusedHash = undefined;
      return { kind: 'unchanged', hash: file.hash };
    }
    const checked = deps.check(file.text);
    if (!checked.ok) {
      const problems = checked.problems.map(formatProblem);
      if (refusedHash !== file.hash) {
        refusedHash = file.hash;
        deps.logger.warn({ trigger, hash: short(file.hash), problems }, 'config change refused');
        announce(
          'refused',
          file.hash,
          `${deps.store.configFile} was changed (${BY[trigger]}) but is not valid, so it was not applied; ` +
            `the host runs on the configuration it had. ${problems.length} problem(s):\n` +
            problems.map((p) => `- ${p}`).join('\n'),
        );
      }
      return { kind: 'refused', hash: file.hash, problems };
    }
    refusedHash = undefined;
    const next: AppliedConfig = { config: checked.config, text: file.text, hash: file.hash };
    const changes = diffConfigs(previous.config, next.config);
    const before = deps.health.snapshot();
    deps.source.replace(next);
    const problems = await deps.health.problems(before);
    if (problems.length > 0) return rollBack(trigger, previous, next, problems);
    deps.saveLastGood(next);
    // An account added or removed whole is started or stopped now (onApplied); its keys are not restart keys.
    const { added, removed } = accountsAddedOrRemoved(previous.config.channels, next.config.channels);
    const alsoLive = [...added, ...removed].map((label) => ['channels', label]);
    const atRestart = restartKeys(changes, alsoLive);
    deps.logger.info(
      { trigger, hash: short(next.hash), changes: changes.map((c) => c.key), atRestart },
      'config reloaded',
    );
    if (changes.length > 0) deps.onApplied?.(changes);
    // A change of comments or layout only changes nothing the owner needs to hear about.
    if (changes.length > 0)
      announce(
        'applied',
        next.hash,
        `Configuration changed (${BY[trigger]}):\n${formatDiff(changes, alsoLive)}` +
          (atRestart.length > 0
            ? `\n${atRestart.length} of these take effect when the host restarts (carapace stop, then start).`
            : ''),
      );
    return { kind: 'applied', hash: next.hash, changes, atRestart };
  }

  function rollBack(
    trigger: ReloadTrigger,
    previous: AppliedConfig,
    failed: AppliedConfig,
    problems: string[],
  ): ReloadOutcome {
    deps.source.replace(previous);
    let restored = `${deps.store.configFile} was restored to the previous version; the failed one is kept in config.history.`;
    try {
      deps.store.write(previous.text, failed.hash);
    } catch (err) {
      // Someone changed the file again meanwhile: their version is the next reload's to judge.
      if (!(err instanceof StaleConfigError)) throw err;
      restored = `${deps.store.configFile} changed again meanwhile and was left as it is.`;
    }
    deps.logger.warn({ trigger, hash: short(failed.hash), problems }, 'config change rolled back');
    announce(
      'rolled-back',
      failed.hash,
      `A configuration change (${BY[trigger]}) was applied and then rolled back, because the host did not work with it:\n` +
        problems.map((p) => `- ${p}`).join('\n') +
        `\nThe previous configuration runs again. ${restored}`,
    );
    return { kind: 'rolled-back', hash: failed.hash, problems };
  }

  return {
    reload(trigger) {
      const run = queue.then(() => reloadNow(trigger));
      queue = run.catch(() => undefined);
      return run;
    },
  };
}
