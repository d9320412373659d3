import { z } from 'zod';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { DEFAULT_CONNECTION_CONFIG } from '@whiskeysockets/baileys';
import type { ChannelDefinition, ChannelDeps, ChatKind } from '../channel.ts';
import { CREDS_FILE, openAuthStore } from './auth-store.ts';
import { isGroupJid, selfIdentity } from './jids.ts';
import { WHATSAPP_CHANNEL } from './inbound-message.ts';
import { createWhatsAppChannel, LAST_TERMINAL_CLOSE } from './whatsapp-channel.ts';
import { whatsappConfigSchema, type WhatsAppConfig } from './whatsapp-config.ts';
import { BAILEYS_VERSION, WHATSAPP_WEB_VERSION, whatsappWebVersionText } from './whatsapp-version.ts';
import { errorMessage } from '../../errors/error-message.ts';

/** What the channel stored of its last final close (whatsapp-channel.ts, LAST_TERMINAL_CLOSE). */
const lastCloseSchema = z.object({ reason: z.string() });

const SETUP_HINT =
  'Add a [channels.whatsapp] section to config.toml, stop the host, run carapace whatsapp login to link ' +
  'your phone, and start the host again.';

/** The WhatsApp channel in the registry: groups (`…@g.us`) and the owner's self-chat. */
export const whatsappChannelDefinition: ChannelDefinition<WhatsAppConfig> = {
  name: WHATSAPP_CHANNEL,
  configSchema: whatsappConfigSchema,
  // whatsapp-markdown.ts turns the agent's Markdown into these; links, headings and tables have no form.
  formattingRules:
    'WhatsApp: use short paragraphs; *bold*, _italic_, ~strike~ and ```code``` work; no Markdown links, headings or tables.',
  capabilities: {
    members: true,
    forwards: true,
    transientSendFailures: true,
    chatMoves: 'WhatsApp groups keep their id for life',
    connectionDrops: true,
    sharedConnection: true,
    retractActions: 'replies carry no buttons on WhatsApp: approvals are answered by typing approve <id>',
    reactions: true,
    typing: true,
    unsend: true,
    edits: true,
  },
  chatId: {
    pattern: /^(\d{5,20}(-\d{5,20})?@g\.us|\d{5,20}@s\.whatsapp\.net)$/,
    example: '120363012345678901@g.us',
  },
  chatKind: (chatId, { dataDir }) => whatsappChatKind(chatId, dataDir),
  registrationBlocked: ({ dataDir }) =>
    isLinked(dataDir)
      ? undefined
      : 'WhatsApp is not linked yet: stop the host, run carapace whatsapp login to link your phone, start the ' +
        'host again, then register the group (carapace chats lists it once it has a message).',
  setupHint: SETUP_HINT,
  create: (deps: ChannelDeps<WhatsAppConfig>) =>
    createWhatsAppChannel({
      config: deps.config,
      dataDir: deps.dataDir,
      logger: deps.logger,
      state: deps.state,
      ...(deps.clock ? { clock: deps.clock } : {}),
    }),
  doctor: async (deps) => whatsappDoctor(deps),
};

/**
 * Groups are read; private chats never (the channel is the owner's own account: it would answer everyone
 * who writes to the owner), except the owner's "Message yourself" chat, which is the admin chat.
 */
function whatsappChatKind(chatId: string, dataDir: string): ChatKind {
  if (isGroupJid(chatId)) return { kind: 'group' };
  if (chatId === linkedPhone(dataDir)) return { kind: 'admin' };
  return {
    kind: 'unserved',
    reason:
      'WhatsApp private chats are never read (Carapace is your own account as a linked device, so it reads ' +
      'groups and your "Message yourself" chat only). Make a WhatsApp group with that person instead and ' +
      'register the group (carapace chats lists it once it has a message).',
  };
}

/** Whether a login was saved here (a finished QR or pairing-code link), without creating one where there is none. */
function isLinked(dataDir: string): boolean {
  if (!fs.existsSync(path.join(dataDir, CREDS_FILE))) return false;
  try {
    return openAuthStore(dataDir).isLinked();
  } catch {
    return false;
  }
}

/** The linked account's phone JID from the saved login, without creating one where there is none. */
function linkedPhone(dataDir: string): string | undefined {
  if (!fs.existsSync(path.join(dataDir, CREDS_FILE))) return undefined;
  try {
    return selfIdentity(openAuthStore(dataDir).state.creds.me)?.phone;
  } catch {
    return undefined;
  }
}

/** `carapace doctor`: the pinned versions, the link, and the last close WhatsApp made final. */
export function whatsappDoctor(deps: Pick<ChannelDeps<WhatsAppConfig>, 'config' | 'dataDir' | 'state'>) {
  const lines: { ok: boolean; line: string }[] = [];
  const installed = installedBaileysVersion();
  const bundled = DEFAULT_CONNECTION_CONFIG.version.join('.');
  lines.push(
    installed === BAILEYS_VERSION && bundled === whatsappWebVersionText()
      ? {
          ok: true,
          line: `WhatsApp: Baileys ${installed}, WhatsApp Web ${whatsappWebVersionText()} (pinned)`,
        }
      : {
          ok: false,
          line:
            `WhatsApp: Baileys ${installed ?? 'missing'} is installed, Carapace pins ${BAILEYS_VERSION} with WhatsApp ` +
            `Web ${WHATSAPP_WEB_VERSION.join('.')} (Baileys ships ${bundled}); reinstall with: npm ci`,
        },
  );
  if (!deps.config.enabled) {
    lines.push({ ok: true, line: 'WhatsApp: disabled in config ([channels.whatsapp] enabled = false)' });
    return lines;
  }
  let linkedAs: string | undefined;
  try {
    const auth = openAuthStore(deps.dataDir);
    linkedAs = auth.isLinked() ? auth.state.creds.me?.id?.split(/[:@]/)[0] : undefined;
  } catch (err) {
    lines.push({ ok: false, line: `WhatsApp: ${errorMessage(err)}` });
    return lines;
  }
  lines.push(
    linkedAs
      ? { ok: true, line: `WhatsApp: linked as +${linkedAs}` }
      : {
          ok: false,
          line: 'WhatsApp: needs login; stop the host, run carapace whatsapp login, then start it again',
        },
  );
  const last = deps.state.get(LAST_TERMINAL_CLOSE);
  if (linkedAs && last) {
    const { reason } = lastCloseSchema.parse(JSON.parse(last));
    lines.push({ ok: false, line: `WhatsApp: the last connection ended for good: ${reason}` });
  }
  return lines;
}

function installedBaileysVersion(): string | undefined {
  try {
    const require = createRequire(import.meta.url);
    return (require('@whiskeysockets/baileys/package.json') as { version?: string }).version;
  } catch {
    return undefined;
  }
}
