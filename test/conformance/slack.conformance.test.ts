import pino from 'pino';
import { createSlackChannel } from '../../host/channels/slack/slack-channel.ts';
import { slackConfigSchema } from '../../host/channels/slack/slack-config.ts';
import { slackChannelDefinition } from '../../host/channels/slack/slack-definition.ts';
import { APP_TOKEN, BOT_TOKEN, BOT_USER, startFakeSlack } from '../fakes/slack/fake-slack.ts';
import { waitFor } from '../helpers/processes.ts';
import { describeChannelConformance } from './channel-conformance.ts';

const OWNER = 'UOWNER01';
const OWNER_DM = 'DOWNER01';
const GROUP = 'CMEMBERS';

// The Slack adapter through the official SDK (Web API + Socket Mode) against a fake Slack that is a real
// HTTP and WebSocket server.
describeChannelConformance(
  'slack',
  async () => {
    const fake = await startFakeSlack({ dmOf: (user) => (user === OWNER ? OWNER_DM : `D${user}`) });
    const channel = createSlackChannel({
      config: slackConfigSchema.parse({ owner_user_id: OWNER, api_url: fake.apiUrl }),
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      tokenProblem: undefined,
      triggerWord: '@Andy',
      logger: pino({ level: 'silent' }),
      retryBaseMs: 20,
    });
    const inGroup = (chatId: string) => ({ channel: chatId, channel_type: 'channel' });
    return {
      channel,
      driver: {
        groupChatId: GROUP,
        memberWrites: (chatId, text, meta) =>
          fake.message({
            ...inGroup(chatId),
            user: 'UFRIEND1',
            text,
            user_profile: { display_name: meta?.senderName ?? 'Friend' },
          }),
        ownerWrites: (text) => fake.message({ channel: OWNER_DM, channel_type: 'im', user: OWNER, text }),
        memberMentionsBot: (chatId, text) =>
          fake.message({ ...inGroup(chatId), user: 'UFRIEND1', text: `<@${BOT_USER}> ${text}` }),
        memberRepliesTo: (chatId, platformId, text) =>
          fake.message({ ...inGroup(chatId), user: 'UFRIEND1', text, thread_ts: platformId }),
        received: async (chatId) =>
          fake
            .posts()
            .filter((p) => p.channel === chatId)
            .map((p) => p.text),
        failNextSend: () => fake.failNext('chat.postMessage', 502),
        killChat: async (chatId) => fake.kill(chatId),
        reactionsOn: async (chatId, ts) => fake.reactions(chatId, ts),
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
  { capabilities: slackChannelDefinition.capabilities, timeoutMs: 10_000 },
);
