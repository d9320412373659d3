/**
 * What the accounts tests share: `[channels.<channel>.<account>]` tables for accounts on fakes, as the
 * owner writes them into config.toml, and the channel definitions the host makes those accounts by, with
 * each WhatsApp number's socket going through its own seam (crabline closes the socket on a group send).
 */
import path from 'node:path';
import { stringify } from 'smol-toml';
import { CHANNEL_DEFINITIONS } from '../../host/channels/channel-definitions.ts';
import type { ChannelDefinition } from '../../host/channels/channel.ts';
import { hostStatus } from '../../host/channels/local/local-api.ts';
import { createLocalClient } from '../../host/channels/local/local-client.ts';
import { createWhatsAppChannel } from '../../host/channels/whatsapp/whatsapp-channel.ts';
import type { WhatsAppConfig } from '../../host/channels/whatsapp/whatsapp-config.ts';
import { channelDataDir, type CarapacePaths } from '../../host/config/paths.ts';
import type { FakeTelegram } from '../fakes/fake-telegram-api.ts';
import type { groupSendsAtSeam } from '../fakes/whatsapp-fake.ts';
import { seedLinkedAuth } from '../fakes/whatsapp-fake.ts';

export type WhatsAppSeam = ReturnType<typeof groupSendsAtSeam>;

/** The variable holding a named Telegram account's bot token (`work` → `WORK_BOT_TOKEN`). */
export const botTokenEnv = (account: string): string => `${account.toUpperCase()}_BOT_TOKEN`;

/** `[channels.telegram.<name>]` for each bot on its fake Bot API, all with one owner. */
export function telegramAccountTables(
  bots: Record<string, FakeTelegram>,
  owner: number,
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(bots).map(([name, fake]) => [
      name,
      { bot_token_env: botTokenEnv(name), owner_user_id: owner, api_root: fake.apiRoot, poll_timeout_s: 1 },
    ]),
  );
}

/** The token variables of `telegramAccountTables`' bots, for `<config dir>/.env` or a secret lookup. */
export function botTokens(bots: Record<string, FakeTelegram>): Record<string, string> {
  return Object.fromEntries(Object.entries(bots).map(([name, fake]) => [botTokenEnv(name), fake.token]));
}

/** `[channels.whatsapp.<name>]` for each number on its crabline server. */
export function whatsappAccountTables(
  urls: Partial<Record<string, string>>,
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(urls).flatMap(([name, url]) => (url ? [[name, { websocket_url: url }]] : [])),
  );
}

/** config.toml holding only these channels' account tables. */
export function channelsToml(channels: Record<string, Record<string, unknown>>): string {
  return stringify({ channels });
}

/**
 * Every channel definition as shipped, WhatsApp's making each account's socket through that account's seam
 * (picked by the account's data folder, `whatsapp.<name>`), after seeding each account's linked login there.
 */
export async function seamedDefinitions(
  paths: CarapacePaths,
  seams: Record<string, WhatsAppSeam>,
): Promise<readonly ChannelDefinition[]> {
  for (const name of Object.keys(seams)) await seedLinkedAuth(channelDataDir(paths, `whatsapp.${name}`));
  const whatsapp = CHANNEL_DEFINITIONS.find(
    (d) => d.name === 'whatsapp',
  ) as ChannelDefinition<WhatsAppConfig>;
  const seamed: ChannelDefinition<WhatsAppConfig> = {
    ...whatsapp,
    create: (deps) => {
      const account = path.basename(deps.dataDir).split('.')[1] ?? '';
      const seam = seams[account];
      if (!seam) throw new Error(`no seam for the WhatsApp account in ${deps.dataDir}`);
      return createWhatsAppChannel({
        config: deps.config,
        dataDir: deps.dataDir,
        logger: deps.logger,
        state: deps.state,
        makeSocket: seam.factory,
        policy: { initialDelayMs: 300, maxDelayMs: 2_000 },
      });
    },
  };
  return CHANNEL_DEFINITIONS.map((d) => (d.name === 'whatsapp' ? (seamed as ChannelDefinition) : d));
}

/** The running channels by label, as `/v1/status` (what `carapace status` prints) lists them. */
export function channelStatuses(socketFile: string) {
  const client = createLocalClient(socketFile);
  return async () =>
    new Map(hostStatus.parse(await client.getJson('/v1/status')).channels.map((c) => [c.name, c]));
}
