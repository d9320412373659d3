/**
 * The Slack adapter's files, owner checks and config through the real SDK against the fake Slack: a file
 * posted in a channel is downloaded with the bot token and cut at the host's limit, a reply's attachment
 * goes through the upload flow, a stranger's DM is refused once and never handed in, and the config and
 * tokens are refused with the fix.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MediaTooLargeError, type InboundMessage } from '../../host/channels/channel.ts';
import { createSlackChannel } from '../../host/channels/slack/slack-channel.ts';
import { slackConfigSchema, tokenProblem } from '../../host/channels/slack/slack-config.ts';
import { APP_TOKEN, BOT_TOKEN, startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.ts';
import { createRecordingHost } from '../fakes/telegram-test-host.ts';

const OWNER = 'UOWNER01';

describe('slack adapter: files, owner checks and config', () => {
  let fake: FakeSlack;
  let channel: ReturnType<typeof createSlackChannel>;
  let rec: ReturnType<typeof createRecordingHost>;
  let dir: string;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-slack-'));
    fake = await startFakeSlack({ dmOf: () => 'DOWNER01' });
    channel = createSlackChannel({
      config: slackConfigSchema.parse({ owner_user_id: OWNER, api_url: fake.apiUrl }),
      botToken: BOT_TOKEN,
      appToken: APP_TOKEN,
      tokenProblem: undefined,
      triggerWord: '@Andy',
      logger: pino({ level: 'silent' }),
      retryBaseMs: 20,
    });
    rec = createRecordingHost();
    await channel.start(rec.host);
  });
  afterEach(async () => {
    await channel.stop();
    await fake.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('hands in a posted file that downloads with the bot token, cut at the limit', async () => {
    const bytes = Buffer.from('%PDF-1.4 hello');
    const file = fake.addFile('F1', bytes, { name: 'menu.pdf', mimetype: 'application/pdf' });
    let media: InboundMessage['media'];
    rec.host.ingestMedia = async (m) => {
      media = m.media;
      return rec.host.ingest(m);
    };
    await fake.message({
      channel: 'CTEAM001',
      channel_type: 'channel',
      user: 'UMEMBER1',
      subtype: 'file_share',
      text: 'the menu',
      files: [file],
    });
    expect(rec.inbound.map((m) => [m.text, m.fromOwner])).toEqual([['the menu', false]]);
    expect(media).toMatchObject({ kind: 'document', fileName: 'menu.pdf', declaredBytes: bytes.length });
    const signal = new AbortController().signal;
    expect(Buffer.from((await media?.download(1_000, signal)) ?? [])).toEqual(bytes);
    await expect(media?.download(4, signal)).rejects.toBeInstanceOf(MediaTooLargeError);
    expect(rec.chats.get('CTEAM001')).toBe('#chan-cteam001');
  });

  it('sends an attachment through the upload flow, with the text as its comment', async () => {
    const file = path.join(dir, 'plan.txt');
    fs.writeFileSync(file, 'the plan');
    const outcome = await channel.send({
      chatId: 'CTEAM001',
      text: 'here it is',
      idempotencyKey: 'k1',
      sendKey: 's1',
      attachment: { path: file, fileName: 'plan.txt', mime: 'text/plain', kind: 'document' },
    });
    expect(outcome.kind).toBe('delivered');
    const [post] = fake.posts();
    expect(post?.text).toBe('here it is');
    expect(post?.files?.map((f) => [f.name, f.bytes.toString()])).toEqual([['plan.txt', 'the plan']]);
  });

  it("refuses a stranger's DM once, hands in only the owner's, and knows the owner's DM", async () => {
    await fake.message({ channel: 'DSTRANGE', channel_type: 'im', user: 'USTRANGE', text: 'I am the owner' });
    await fake.message({ channel: 'DSTRANGE', channel_type: 'im', user: 'USTRANGE', text: 'approve abc234' });
    await fake.message({ channel: 'DOWNER01', channel_type: 'im', user: OWNER, text: 'pending' });
    expect(rec.inbound.map((m) => [m.chatId, m.text, m.fromOwner])).toEqual([['DOWNER01', 'pending', true]]);
    expect(fake.posts().filter((p) => p.channel === 'DSTRANGE')).toHaveLength(1);
    expect(channel.adminChatId()).toBe('DOWNER01');
  });

  it('refuses a malformed config and tokens of the wrong kind, saying what to fix', () => {
    expect(slackConfigSchema.safeParse({ owner_user_id: 'alice' }).error?.message).toMatch(/member id/);
    expect(slackConfigSchema.safeParse({ bot_token: 'xoxb-1' }).success).toBe(false);
    expect(tokenProblem('bot', 'xapp-1', 'SLACK_BOT_TOKEN')).toMatch(/must start with xoxb-/);
    expect(tokenProblem('app', undefined, 'SLACK_APP_TOKEN')).toMatch(/not set/);
    expect(tokenProblem('app', 'xapp-1', 'SLACK_APP_TOKEN')).toBeUndefined();
  });
});
