/**
 * Two Telegram bots on one host (`[channels.telegram.family]`, `[channels.telegram.work]`): the real host
 * wiring (startHost) with two real grammY channels, each against its own fake Bot API, and an in-process
 * runner that answers with its group's id. Both bots sit in the same Telegram chat, so the chat id alone
 * would collide: each account's group is its own, and each is answered through its own bot only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { hostStatus } from '../../../host/channels/local/local-api.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import type { AgentRunner } from '../../../host/router/agent-runner.ts';
import { eventually } from '../../e2e/e2e-harness.ts';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/fake-telegram-api.ts';
import { staticRunner } from '../../helpers/static-runner.ts';

const OWNER = 6160;
const MEMBER = { id: 6161, first_name: 'Mia' };
/** One chat both bots were added to. */
const SHARED = { id: -1006006, type: 'supergroup' as const, title: 'Both bots' };

let dir: string;
let host: RunningHost | undefined;
const fakes: FakeTelegram[] = [];

afterEach(async () => {
  await host?.stop('test over');
  host = undefined;
  for (const f of fakes.splice(0)) await f.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Every run answers with the id of the group it ran for. */
const groupIdRunner: AgentRunner = {
  start(ctx, callbacks) {
    const done = (async () => {
      await callbacks.reply(`answered as ${ctx.group.id}`);
      return { ok: true as const, reason: 'completed' as const };
    })();
    return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
  },
};

it('runs one bot per account, keeps a chat both bots see as two groups, and answers each through its own bot', async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-tg-accounts-')));
  const paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  const family = await startFakeTelegram({ token: '111:family', botId: 111, username: 'family_bot' });
  fakes.push(family);
  const work = await startFakeTelegram({ token: '222:work', botId: 222, username: 'work_bot' });
  fakes.push(work);
  const tokens: Record<string, string> = { FAMILY_BOT_TOKEN: family.token, WORK_BOT_TOKEN: work.token };
  const account = (fake: FakeTelegram, tokenEnv: string) => ({
    bot_token_env: tokenEnv,
    owner_user_id: OWNER,
    api_root: fake.apiRoot,
    poll_timeout_s: 1,
  });
  host = await startHost({
    paths,
    config: hostConfigSchema.parse({
      outbox: { retry_base_ms: 10, retry_max_ms: 100 },
      channels: {
        telegram: {
          family: account(family, 'FAMILY_BOT_TOKEN'),
          work: account(work, 'WORK_BOT_TOKEN'),
        },
      },
    }),
    logger: pino({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' }),
    redact: (s) => s,
    secret: (name) => tokens[name],
    createRunner: staticRunner(groupIdRunner),
  });
  const running = host;
  // The same Telegram chat, registered once per account: two groups, no collision.
  running.store.groups.add({
    id: 'fam',
    channel: 'telegram.family',
    chatId: String(SHARED.id),
    name: 'Fam',
    isAdmin: false,
  });
  running.store.groups.add({
    id: 'wrk',
    channel: 'telegram.work',
    chatId: String(SHARED.id),
    name: 'Wrk',
    isAdmin: false,
  });

  family.message({ chat: SHARED, from: MEMBER, text: '@Andy dinner?' });
  await eventually('the family bot answers', () =>
    family.sent().find((s) => s.chat_id === SHARED.id && s.text.includes('answered as fam')),
  );
  work.message({ chat: SHARED, from: MEMBER, text: '@Andy standup?' });
  await eventually('the work bot answers', () =>
    work.sent().find((s) => s.chat_id === SHARED.id && s.text.includes('answered as wrk')),
  );
  await running.whenIdle();
  // Each answer went out through its own account's bot only.
  expect(
    family
      .sent()
      .filter((s) => s.chat_id === SHARED.id)
      .map((s) => s.text),
  ).toEqual(['answered as fam']);
  expect(
    work
      .sent()
      .filter((s) => s.chat_id === SHARED.id)
      .map((s) => s.text),
  ).toEqual(['answered as wrk']);

  // status lists every account, each with the owner's private chat as its admin chat.
  const status = hostStatus.parse(await createLocalClient(paths.socketFile).getJson('/v1/status'));
  const byName = new Map(status.channels.map((c) => [c.name, c]));
  expect(byName.get('telegram.family')).toMatchObject({ state: 'connected', adminChat: String(OWNER) });
  expect(byName.get('telegram.work')).toMatchObject({ state: 'connected', adminChat: String(OWNER) });
  // Each account keeps its own data folder, beside the default account's.
  expect(fs.existsSync(path.join(paths.dataDir, 'channels', 'telegram.family'))).toBe(true);
  expect(fs.existsSync(path.join(paths.dataDir, 'channels', 'telegram.work'))).toBe(true);
}, 60_000);
