import { errorMessage } from '../errors/error-message.ts';
import type { Logger } from '../logging/logger.ts';
import { accountsAddedOrRemoved } from './channel-accounts.ts';
import type { Channel } from './channel.ts';

export interface AccountChangesDeps {
  /**
   * The `[channels]` accounts the host runs now, by label (what the registry reads): replaced here as
   * accounts start and stop, so registration and chat kinds follow what runs, not what the file says.
   */
  started: { current: Record<string, unknown> };
  /** Channels that are no account of the file (the console, a test's extras): never stopped here. */
  fixed: readonly string[];
  /** Creates the channel of one account from `started.current` (its folder, state and logger). */
  create(label: string): Channel;
  /** Starts a created channel as the host starts its channels (its stop registered for the host's stop). */
  start(ch: Channel): Promise<void>;
  /** Stops a running account's channel and forgets it (its status too). */
  stop(label: string): Promise<void>;
  logger: Logger;
}

/**
 * A reload that adds or removes a whole `[channels.<channel>.<account>]` starts or stops that account's
 * channel and no other; an edit of a running account's settings waits for the restart (reload-scope.ts).
 * An account that fails to start is reported and left out, so the next reload tries it again.
 */
export function createAccountChanges(deps: AccountChangesDeps) {
  return async function apply(channels: Record<string, unknown>): Promise<void> {
    const { added, removed } = accountsAddedOrRemoved(deps.started.current, channels);
    for (const label of removed.filter((l) => !deps.fixed.includes(l))) {
      const rest = { ...deps.started.current };
      delete rest[label];
      deps.started.current = rest;
      await deps.stop(label);
      deps.logger.info({ channel: label }, 'account removed from config: channel stopped');
    }
    for (const label of added.filter((l) => !deps.fixed.includes(l))) {
      deps.started.current = { ...deps.started.current, [label]: channels[label] };
      try {
        await deps.start(deps.create(label));
        deps.logger.info({ channel: label }, 'account added to config: channel started');
      } catch (err) {
        const rest = { ...deps.started.current };
        delete rest[label];
        deps.started.current = rest;
        await deps.stop(label).catch(() => undefined);
        deps.logger.error(
          { channel: label, err: errorMessage(err) },
          'account added to config did not start',
        );
      }
    }
  };
}
