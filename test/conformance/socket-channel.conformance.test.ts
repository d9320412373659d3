import path from 'node:path';
import {
  createSocketChannel,
  FAKE_OWNER,
  postToSocketChannel,
  socketChannelDeliveries,
} from '../fakes/socket-channel.ts';
import { describeChannelConformance } from './channel-conformance.ts';

// The test socket channel: the reference for what a network adapter (Telegram, WhatsApp) must do.
describeChannelConformance(
  'test socket channel',
  async ({ dir }) => {
    const socketFile = path.join(dir, 'fake.sock');
    const deliveriesFile = path.join(dir, 'deliveries.jsonl');
    const channel = createSocketChannel({ socketFile, deliveriesFile, dieMarker: path.join(dir, 'never') });
    let seq = 0;
    const post = (chatId: string, text: string, over: Record<string, unknown> = {}) =>
      postToSocketChannel(socketFile, { chatId, externalId: `m${(seq += 1)}`, text, ...over }).then(
        () => undefined,
      );
    return {
      channel,
      driver: {
        groupChatId: '-100123',
        memberWrites: (chatId, text, meta) =>
          post(chatId, text, { senderName: meta?.senderName ?? 'Friend' }),
        ownerWrites: (text) => post(FAKE_OWNER.chatId, text, { senderId: FAKE_OWNER.userId }),
        memberMentionsBot: (chatId, text) => post(chatId, text, { mentionsBot: true }),
        memberRepliesTo: (chatId, platformId, text) => post(chatId, text, { replyTo: platformId }),
        async received(chatId) {
          return socketChannelDeliveries(deliveriesFile)
            .filter((d) => d.chatId === chatId)
            .map((d) => d.text);
        },
        failNextSend: (chatId) =>
          channel.platform.answerNext(chatId, {
            kind: 'retry',
            reason: 'connection reset',
            retryAfterMs: 20,
          }),
        async killChat(chatId) {
          for (let i = 0; i < 10; i += 1)
            channel.platform.answerNext(chatId, {
              kind: 'permanent',
              reason: 'the bot was removed from the chat',
            });
        },
        moveChat: (chatId, newChatId) =>
          channel.platform.answerNext(chatId, {
            kind: 'moved',
            newChatId,
            reason: 'upgraded to a supergroup',
          }),
        dropsConnectionOn: (chatId, marker) => channel.platform.dropsConnectionOn(chatId, marker),
        dropConnection: async () => channel.platform.drop(),
        restoreConnection: async () => channel.platform.restore(),
      },
    };
  },
  {
    capabilities: {
      members: true,
      forwards: 'the test platform has no forwarding',
      transientSendFailures: true,
      chatMoves: true,
      connectionDrops: true,
      sharedConnection: true,
      retractActions: 'the test platform shows no buttons',
      reactions: 'the test platform has no reactions',
      typing: 'the test platform shows no typing',
      unsend: 'the test platform cannot take a message back',
      edits: 'the test platform cannot change a message it delivered',
    },
  },
);
