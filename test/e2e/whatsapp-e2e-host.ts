/**
 * A real host with the WhatsApp channel: the real Baileys socket against crabline's WhatsApp server, real
 * containers and the fake provider, the group `fam` registered on GROUP. Group sends are taken at the
 * socket seam (crabline closes the socket on a group send); everything else goes over the wire.
 */
import pino from 'pino';
import {
  createWhatsAppChannel,
  type WhatsAppChannel,
} from '../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../host/channels/whatsapp/whatsapp-config.ts';
import { channelDataDir } from '../../host/config/paths.ts';
import { eventually, startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';
import {
  groupSendsAtSeam,
  seedLinkedAuth,
  startFakeWhatsApp,
  type FakeWhatsApp,
  type SeamOptions,
} from '../fakes/whatsapp-fake.ts';

export const GROUP = '120363000000000001@g.us';

export interface WhatsAppE2e {
  e2e: E2eHost;
  server: FakeWhatsApp;
  /** The live channel (a new one after `e2e.restart()`). */
  readonly channel: WhatsAppChannel;
  seam: ReturnType<typeof groupSendsAtSeam>;
}

export async function startWhatsAppHost(
  dir: string,
  opts: {
    config?: E2eHostOptions['config'];
    seam?: SeamOptions;
    transcribe?: E2eHostOptions['transcribe'];
    /** More keys of `[channels.whatsapp]` (the account's defaults for its groups, say). */
    account?: Record<string, unknown>;
  } = {},
): Promise<WhatsAppE2e> {
  const server = await startFakeWhatsApp(dir);
  const seam = groupSendsAtSeam(undefined, opts.seam);
  // A new channel at each (re)start of the host; `channel` is always the live one.
  let channel: WhatsAppChannel | undefined;
  const e2e = await startE2eHost({
    config: { ...opts.config, channels: { whatsapp: { ...opts.account, websocket_url: server.url } } },
    ...(opts.transcribe ? { transcribe: opts.transcribe } : {}),
    channels: async (paths) => {
      const dataDir = channelDataDir(paths, 'whatsapp');
      await seedLinkedAuth(dataDir);
      channel = createWhatsAppChannel({
        config: whatsappConfigSchema.parse({ websocket_url: server.url }),
        dataDir,
        logger: pino({ level: 'silent' }),
        makeSocket: seam.factory,
        policy: { initialDelayMs: 300, maxDelayMs: 2_000 },
      });
      return [channel];
    },
  });
  const live = () => {
    if (!channel) throw new Error('the channel was not built');
    return channel;
  };
  await eventually('WhatsApp connected', () => live().status().state === 'connected');
  const added = await e2e.cli(['groups', 'add', 'fam', '--channel', 'whatsapp', '--chat', GROUP]);
  if (added.code !== 0) throw new Error(`groups add: ${added.stderr}`);
  // Edits are taken at the seam (crabline records none): the chat shows each message's latest text.
  const shown: FakeWhatsApp = {
    ...server,
    sentTexts: () =>
      server.sentTexts().map((sent) => {
        const edit = seam.edits.findLast((e) => e.chatId === sent.to && e.id === sent.id);
        return edit ? { ...sent, text: edit.text } : sent;
      }),
  };
  return {
    e2e,
    server: shown,
    get channel() {
      return live();
    },
    seam,
  };
}
