/**
 * The seam between whoever writes config.toml (an approved chat proposal, `carapace config set`) and the
 * running host that applies it. Types only, so neither side imports the other's implementation; see
 * /DESIGN.md "Config editing".
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
