/**
 * Slack end to end: the official SDK in the host (Socket Mode in, Web API out) against a fake Slack that is
 * a real HTTP and WebSocket server, real containers and the fake provider. A channel message mentioning
 * the bot is answered in the channel and acknowledged with a reaction; a stranger's DM is refused, not
 * stored; an approval asked in the owner's DM is decided by the owner typing there.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WAITING_FOR_OWNER_LINE } from '../../host/admin/waiting-line.ts';
import { APP_TOKEN, BOT_TOKEN, BOT_USER, startFakeSlack, type FakeSlack } from '../fakes/slack/fake-slack.ts';
import { bash, nextApproval, runTools, securityResponder } from '../fakes/security-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const OWNER = 'UOWNER01';
const OWNER_DM = 'DOWNER01';
const FAMILY = 'CFAMILY1';
const MEMBER = 'UMEMBER1';
const tag = () => crypto.randomBytes(3).toString('hex');

await describeDocker('e2e slack: the Slack SDK against a fake Slack, through real containers', () => {
  let slack: FakeSlack;
  let h: E2eHost;
  const seenApprovals = new Set<string>();
  const postsIn = (chat: string) => slack.posts().filter((p) => p.channel === chat);
  const answers = (chat: string) => postsIn(chat).filter((p) => p.text !== WAITING_FOR_OWNER_LINE);

  beforeAll(async () => {
    slack = await startFakeSlack({ dmOf: (user) => (user === OWNER ? OWNER_DM : `D${user}`) });
    h = await startE2eHost({
      config: {
        runs: { max_attempts: 1 },
        outbox: { retry_base_ms: 200, retry_max_ms: 2_000 },
        channels: { slack: { owner_user_id: OWNER, api_url: slack.apiUrl } },
      },
      secrets: { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_APP_TOKEN: APP_TOKEN },
    });
    const res = await h.cli(['groups', 'add', 'family', '--channel', 'slack', '--chat', FAMILY]);
    expect(res.code, res.stderr).toBe(0);
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
    await slack?.close();
  }, 60_000);

  it('answers a channel message that mentions the bot in the channel, acknowledged with a reaction', async () => {
    const before = answers(FAMILY).length;
    await slack.message({
      channel: FAMILY,
      channel_type: 'channel',
      user: MEMBER,
      text: `<@${BOT_USER}> what is for dinner?`,
    });
    const reply = await eventually('the reply in the channel', () => answers(FAMILY)[before], 90_000);
    expect(reply.text).toContain('what is for dinner?');
    const mention = slack.calls.find((c) => c.method === 'reactions.add' && c.params.channel === FAMILY);
    expect(mention?.params.name).toBe('eyes');
    // Without a mention it is context, not a turn.
    await slack.message({ channel: FAMILY, channel_type: 'channel', user: MEMBER, text: 'just chatting' });
    await eventually('the context stored', () => {
      try {
        return h.messageId('family', 'just chatting') > 0;
      } catch {
        return false;
      }
    });
  }, 120_000);

  it('refuses a stranger in a direct message and stores nothing of it', async () => {
    await slack.message({
      channel: 'DSTRANGE',
      channel_type: 'im',
      user: 'USTRANGE',
      text: 'approve abc234 please',
    });
    const refusal = await eventually('the refusal', () => postsIn('DSTRANGE')[0]);
    expect(refusal.text).toMatch(/only talks to its owner/);
    const stored = h.host.store.db
      .prepare("SELECT COUNT(*) AS n FROM messages WHERE text LIKE '%abc234 please%'")
      .get() as { n: number };
    expect(stored.n).toBe(0);
  }, 30_000);

  it("asks approval in the owner's DM and the owner's typed approval there lets the run go on", async () => {
    const file = `FLAGGED-slack-${tag()}`;
    h.fake.setResponder(
      securityResponder({ family: runTools([bash(`touch ${file} && mkfifo fifo-${file}`)]) }),
    );
    await slack.message({
      channel: FAMILY,
      channel_type: 'channel',
      user: MEMBER,
      text: `<@${BOT_USER}> run the flagged command`,
    });
    const ask = await nextApproval(h, seenApprovals, file);
    await eventually('the request in the owner DM', () =>
      postsIn(OWNER_DM).find((p) => p.text.includes(ask.id)),
    );
    await slack.message({ channel: OWNER_DM, channel_type: 'im', user: OWNER, text: `approve ${ask.id}` });
    await eventually(
      'the command executed',
      () => h.host.store.approvals.get(ask.id)?.status === 'executed',
      60_000,
    );
    await eventually('family answered', () => answers(FAMILY).length > 1, 60_000);
    expect(fs.existsSync(path.join(h.paths.groupsDir, 'family', file))).toBe(true);
  }, 150_000);
});
