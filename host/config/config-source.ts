import type { HostConfig } from './schema.ts';

/** A validated configuration together with the file it came from. */
export interface AppliedConfig {
  config: HostConfig;
  /** The file's text ('' when there was no file). */
  text: string;
  /** sha256 of the file's bytes, as ConfigFileStore.read() computes it. */
  hash: string;
}

export type ConfigListener = (next: AppliedConfig, previous: AppliedConfig) => void;

/**
 * The configuration the host runs on now. Subsystems read `current()` when they use a value instead of
 * capturing it at start, so a reloaded file takes effect at the next message, run or request; what a
 * subsystem can only take at start is named in reload-scope.ts.
 */
export interface ConfigSource {
  current(): HostConfig;
  applied(): AppliedConfig;
  /** Called after each replace, in subscription order; returns the unsubscribe function. */
  subscribe(listener: ConfigListener): () => void;
  /** Only the reloader (and safe start) call this: it is checked before it gets here. */
  replace(next: AppliedConfig): void;
}

/**
 * `onListenerError` hears a listener that threw: the change is applied all the same and the other
 * listeners still hear of it, so one broken subscriber cannot leave the host half on the old config.
 */
export function createConfigSource(
  initial: AppliedConfig,
  onListenerError: (err: unknown) => void,
): ConfigSource {
  let applied = initial;
  const listeners = new Set<ConfigListener>();
  return {
    current: () => applied.config,
    applied: () => applied,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    replace(next) {
      const previous = applied;
      applied = next;
      for (const l of [...listeners]) {
        try {
          l(next, previous);
        } catch (err) {
          onListenerError(err);
        }
      }
    },
  };
}
