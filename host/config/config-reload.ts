import type { ConfigReloader, ReloadOutcome } from './config-reloader.ts';

/**
 * The seam between whoever writes config.toml (an approved chat proposal, `carapace config set`) and the
 * running host that applies it (config-reloader.ts). The writer depends only on `ReloadConfig`, passed
 * in by the composition root; see DESIGN.md "Config editing".
 */

export interface ConfigReloadOutcome {
  /** true: the running host now runs on the file's current version (or nothing needed applying). */
  ok: boolean;
  /**
   * Lines for a person: what applied now and what applies at restart, or why it failed and what was
   * done about it. Shown as it is to the agent and in the admin chat.
   */
  detail: string;
}

/**
 * Asks the running host to read config.toml again and apply it. Never rejects: a failure is
 * `ok: false` with its reason.
 */
export type ReloadConfig = (reason: string) => Promise<ConfigReloadOutcome>;

/** Until the host can apply a config while it runs: the file is saved, the owner restarts. */
export const reloadOnRestart: ReloadConfig = async () => ({
  ok: true,
  detail: 'saved; it applies when the host restarts',
});

/** The reloader's outcome in the words the agent and the owner read after an approved change. */
export function describeReload(outcome: ReloadOutcome): ConfigReloadOutcome {
  const lines = (problems: string[]) => problems.map((p) => `- ${p}`).join('\n');
  switch (outcome.kind) {
    case 'unchanged':
      return { ok: true, detail: 'the running host already runs this version' };
    case 'applied':
      return {
        ok: true,
        detail:
          outcome.atRestart.length === 0
            ? 'applied to the running host, no restart needed'
            : `applied to the running host; these take effect at the next restart: ${outcome.atRestart.join(', ')}`,
      };
    case 'refused':
      return {
        ok: false,
        detail: `the host refused the file and runs on the configuration it had:\n${lines(outcome.problems)}`,
      };
    case 'rolled-back':
      return {
        ok: false,
        detail: `it was applied, then rolled back because the host did not work with it:\n${lines(outcome.problems)}`,
      };
  }
}

/**
 * A `ReloadConfig` for a part that exists before the reloader does (the agent runtime, the web console):
 * it reads the reloader at each call; until the host runs, the change waits for the start's own read.
 */
export function reloadWhenRunning(
  reloader: () => Pick<ConfigReloader, 'reload'> | undefined,
  trigger: 'proposal' | 'web',
): () => Promise<ConfigReloadOutcome> {
  const notYet =
    trigger === 'proposal'
      ? 'the host is still starting; the file is read again once it runs'
      : 'the host is still starting; it reads the file once it runs';
  return async () => {
    const current = reloader();
    return current ? describeReload(await current.reload(trigger)) : { ok: false, detail: notYet };
  };
}
