import { ALWAYS_ON_CHANNELS, CHANNEL_DEFINITIONS } from '../../channels/channel-definitions.ts';
import { createChannelRegistry } from '../../channels/registry.ts';
import { channelDataDir } from '../../config/paths.ts';
import type { CliContext } from '../cli-context.ts';

/** The channel registry as the CLI sees it: the config file's `[channels]` and the data folder's logins. */
export function cliChannelRegistry(ctx: Pick<CliContext, 'config' | 'paths'>) {
  return createChannelRegistry({
    definitions: CHANNEL_DEFINITIONS,
    config: () => ctx.config().channels,
    alwaysOn: ALWAYS_ON_CHANNELS,
    dataDirOf: (name) => channelDataDir(ctx.paths, name),
  });
}
