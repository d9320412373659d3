import pino from 'pino';
import { createTelegramChannel } from '../../host/channels/telegram/telegram-channel.ts';
import { TELEGRAM_CHANNEL, telegramConfigSchema } from '../../host/channels/telegram/telegram-config.ts';
import { telegramChannelDefinition } from '../../host/channels/telegram/telegram-definition.ts';
import { startFakeTelegram } from '../fakes/fake-telegram-api.ts';
import { channelStateIn, handledThrough } from '../fakes/telegram-test-host.ts';
import { waitFor } from '../helpers/processes.ts';
import { describeChannelConformance, type ContentKind } from './channel-conformance.ts';

const OWNER = 5550001;
const GROUP = { id: -100123456, type: 'supergroup' as const, title: 'Members' };
const OWNER_CHAT = { id: OWNER, type: 'private' as const };
const STRANGER = { id: 66, is_bot: false, first_name: 'Eve' };

/** A file as the Bot API describes one in a message. */
const file = (id: string, extra: Record<string, unknown> = {}) => ({
  file_id: id,
  file_unique_id: `u-${id}`,
  file_size: 3,
  ...extra,
});

/** The fields a message of `kind` carries in the Bot API, with `words` in its free-text parts. */
function telegramContent(kind: ContentKind, words: string): Record<string, unknown> {
  const here = { latitude: 52.37, longitude: 4.89 };
  switch (kind) {
    case 'text':
      return { text: words };
    case 'caption':
      return { photo: [file('p1', { width: 800, height: 600 })], caption: words };
    case 'location':
      return { location: here, venue: { location: here, title: words, address: words } };
    case 'live location':
      return { location: { ...here, live_period: 900 } };
    case 'contact':
      return { contact: { phone_number: '+15550001111', first_name: words } };
    case 'poll':
      return {
        poll: {
          id: 'poll-1',
          question: words,
          options: [{ text: 'yes', voter_count: 0 }],
          total_voter_count: 0,
          is_closed: false,
          is_anonymous: true,
          type: 'regular',
          allows_multiple_answers: false,
        },
      };
    case 'document':
      return {
        document: file('d1', { file_name: `${words}.pdf`, mime_type: 'application/pdf' }),
        caption: words,
      };
    case 'voice note':
      return { voice: file('v1', { duration: 2, mime_type: 'audio/ogg' }), caption: words };
    case 'contacts':
      throw new Error('Telegram has no message with several contacts');
  }
}

/** Telegram quotes part of a message's text or caption, and nothing of other content. */
const quotable = (content: Record<string, unknown>) => typeof (content.text ?? content.caption) === 'string';

// The Telegram adapter through the real grammY client against a fake Bot API that is a real HTTP server.
describeChannelConformance(
  'telegram',
  async ({ store }) => {
    const fake = await startFakeTelegram();
    const state = channelStateIn(store.db, TELEGRAM_CHANNEL);
    const channel = createTelegramChannel({
      config: telegramConfigSchema.parse({ owner_user_id: OWNER, api_root: fake.apiRoot, poll_timeout_s: 1 }),
      token: fake.token,
      triggerWord: '@Andy',
      state,
      logger: pino({ level: 'silent' }),
      retryBaseMs: 20,
    });
    // The driver returns once the adapter handled the update: its durable offset moved past it.
    const handled = (updateId: number) => handledThrough(state, updateId);
    const member = { id: 42, first_name: 'Friend' };
    const chatOf = (chatId: string) => ({ ...GROUP, id: Number(chatId) });
    return {
      channel,
      driver: {
        groupChatId: String(GROUP.id),
        movedChatId: '-100654321',
        memberWrites: (chatId, text, meta) =>
          handled(
            fake.message({
              chat: chatOf(chatId),
              from: { ...member, first_name: meta?.senderName ?? 'Friend' },
              text,
            }).updateId,
          ),
        ownerWrites: (text) =>
          handled(fake.message({ chat: { id: OWNER, type: 'private' }, from: { id: OWNER }, text }).updateId),
        ownerForwards: (text, author) =>
          handled(
            fake.forward({
              chat: { id: OWNER, type: 'private' },
              from: { id: OWNER },
              author: { id: 66, first_name: author },
              text,
            }).updateId,
          ),
        async ownerSendsContent(kind, shape, words) {
          const content = telegramContent(kind, words);
          const forwardOrigin = { type: 'user', date: 1, sender_user: STRANGER };
          if (shape === 'own' || shape === 'forwarded') {
            const extra = shape === 'forwarded' ? { ...content, forward_origin: forwardOrigin } : content;
            await handled(fake.message({ chat: OWNER_CHAT, from: { id: OWNER }, extra }).updateId);
            return { quotable: false };
          }
          // The owner's earlier message in the private chat: theirs, or a stranger's they forwarded there.
          const replied = {
            message_id: 777,
            date: 1,
            chat: OWNER_CHAT,
            from: { id: OWNER, is_bot: false, first_name: 'Owner' },
            ...content,
            ...(shape === 'quote of a forward' ? { forward_origin: forwardOrigin } : {}),
          };
          const canQuote = quotable(content);
          const extra = {
            reply_to_message: replied,
            ...(canQuote ? { quote: { text: words, position: 0, is_manual: true } } : {}),
          };
          await handled(
            fake.message({ chat: OWNER_CHAT, from: { id: OWNER }, text: 'what about this?', extra }).updateId,
          );
          return { quotable: canQuote };
        },
        memberMentionsBot: (chatId, text) => {
          const full = `@${fake.username} ${text}`;
          const entities = [{ type: 'mention', offset: 0, length: fake.username.length + 1 }];
          return handled(fake.message({ chat: chatOf(chatId), from: member, text: full, entities }).updateId);
        },
        memberRepliesTo: (chatId, platformId, text) => {
          const mine = fake
            .sent()
            .some((s) => s.chat_id === Number(chatId) && String(s.message_id) === platformId);
          const original = {
            message_id: mine ? Number(platformId) : 999_999,
            date: 1,
            chat: chatOf(chatId),
            from: mine
              ? { id: fake.botId, is_bot: true, first_name: 'Bot' }
              : { id: 43, is_bot: false, first_name: 'Other' },
            text: 'earlier',
          };
          return handled(
            fake.message({ chat: chatOf(chatId), from: member, text, extra: { reply_to_message: original } })
              .updateId,
          );
        },
        async received(chatId) {
          const gone = (id: number) =>
            fake.deleted().some((d) => d.chat_id === Number(chatId) && d.message_id === id);
          return fake
            .sent()
            .filter((s) => s.chat_id === Number(chatId) && !gone(s.message_id))
            .map((s) => s.text);
        },
        failNextSend: () => fake.failNext('sendMessage', { error_code: 502, description: 'Bad Gateway' }),
        async killChat() {
          fake.failNext(
            'sendMessage',
            { error_code: 403, description: 'Forbidden: bot was kicked from the supergroup chat' },
            10,
          );
        },
        moveChat: (chatId, newChatId) => fake.migrate(Number(chatId), Number(newChatId)),
        reactionsOn: async (chatId, externalId) => fake.reactions(Number(chatId), Number(externalId)),
        // Telegram has no "stop typing" call: "typing…" lapses by itself.
        typingSignals: async (chatId) =>
          fake.calls
            .filter((c) => c.method === 'sendChatAction' && c.params.chat_id === Number(chatId))
            .map(() => 'on' as const),
        typingLapsesAfterMs: 5_000,
        async showsButtons(chatId, platformId) {
          const at = { chat_id: Number(chatId), message_id: Number(platformId) };
          const sent = fake.sent().find((s) => s.chat_id === at.chat_id && s.message_id === at.message_id);
          const edits = fake.calls.filter(
            (c) =>
              c.method === 'editMessageReplyMarkup' &&
              c.params.chat_id === at.chat_id &&
              c.params.message_id === at.message_id,
          );
          return sent?.reply_markup !== undefined && edits.length === 0;
        },
        async dropConnection() {
          fake.down();
          await waitFor('the adapter to notice', () => channel.status().state !== 'connected', 5_000);
        },
        async restoreConnection() {
          fake.up();
          await waitFor('the adapter to reconnect', () => channel.status().state === 'connected', 8_000);
        },
        close: () => fake.close(),
      },
    };
  },
  {
    capabilities: telegramChannelDefinition.capabilities,
    lacksContent: { contacts: 'Telegram sends one contact per message' },
    timeoutMs: 10_000,
  },
);
