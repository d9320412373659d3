/**
 * Two Telegram bots on one host (`[channels.telegram.family]`, `[channels.telegram.work]`): the real host
 * wiring (startHost) with two real grammY channels, each against its own fake Bot API, and an in-process
 * runner that answers with its group's id. Both bots sit in the same Telegram chat, so the chat id alone
 * would collide: each account's group is its own, and each is answered through its own bot only. Removing
 * one account's table from config.toml and reloading stops that bot alone; putting it back starts it again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { EXAMPLE_CONFIG_FILE } from '../../../host/cli/cli-context.ts';
import { createConfigFileStore } from '../../../host/config/config-file-store.ts';
import { loadStartConfig } from '../../../host/config/safe-start.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { eventually } from '../../e2e/e2e-harness.ts';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/fake-telegram-api.ts';
import {
  botTokens,
  channelStatuses,
  channelsToml,
  telegramAccountTables,
} from '../../helpers/account-channels.ts';
import { groupIdRunner } from '../../helpers/answering-runner.ts';
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

/** `[channels.telegram.<name>]` for each bot, as the owner writes them into config.toml. */
const configText = (bots: Record<string, FakeTelegram>) =>
  channelsToml({ telegram: telegramAccountTables(bots, OWNER) });

it('runs one bot per account, keeps a chat both bots see as two groups, answers each through its own bot, and starts or stops one account at a reload', async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-tg-accounts-')));
  const paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  const family = await startFakeTelegram({ token: '111:family', botId: 111, username: 'family_bot' });
  fakes.push(family);
  const work = await startFakeTelegram({ token: '222:work', botId: 222, username: 'work_bot' });
  fakes.push(work);
  const tokens = botTokens({ family, work });
  fs.mkdirSync(paths.configDir, { recursive: true });
  fs.writeFileSync(paths.configFile, configText({ family, work }));
  const start = loadStartConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
  host = await startHost({
    paths,
    config: start.applied.config,
    reload: { start, exampleFile: EXAMPLE_CONFIG_FILE, watchDebounceMs: 60_000 },
    logger: pino({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' }),
    redact: (s) => s,
    secret: (name) => tokens[name],
    createRunner: staticRunner(groupIdRunner),
  });
  const running = host;
  const client = createLocalClient(paths.socketFile);
  const status = channelStatuses(paths.socketFile);
  // The same Telegram chat, registered once per account: two groups, no collision.
  for (const [id, channel] of [
    ['fam', 'telegram.family'],
    ['wrk', 'telegram.work'],
  ] as const)
    running.store.groups.add({ id, channel, chatId: String(SHARED.id), name: id, isAdmin: false });
  const answered = (fake: FakeTelegram, group: string) =>
    eventually(`${group} answered`, () =>
      fake.sent().find((s) => s.chat_id === SHARED.id && s.text === `answered as ${group}`),
    );
  const texts = (fake: FakeTelegram) =>
    fake
      .sent()
      .filter((s) => s.chat_id === SHARED.id)
      .map((s) => s.text);

  family.message({ chat: SHARED, from: MEMBER, text: '@Andy dinner?' });
  await answered(family, 'fam');
  work.message({ chat: SHARED, from: MEMBER, text: '@Andy standup?' });
  await answered(work, 'wrk');
  await running.whenIdle();
  // Each answer went out through its own account's bot only.
  expect(texts(family)).toEqual(['answered as fam']);
  expect(texts(work)).toEqual(['answered as wrk']);

  // status lists every account, each with the owner's private chat as its admin chat.
  const both = await status();
  expect(both.get('telegram.family')).toMatchObject({ state: 'connected', adminChat: String(OWNER) });
  expect(both.get('telegram.work')).toMatchObject({ state: 'connected', adminChat: String(OWNER) });
  // Each account keeps its own data folder, beside where the default account's is.
  expect(fs.existsSync(path.join(paths.dataDir, 'channels', 'telegram.family'))).toBe(true);
  expect(fs.existsSync(path.join(paths.dataDir, 'channels', 'telegram.work'))).toBe(true);

  // The work account's table removed: a reload stops that bot and no other, with nothing left for a restart.
  const files = createConfigFileStore({ configFile: paths.configFile });
  files.write(configText({ family }), files.read().hash);
  expect(await client.reloadConfig()).toMatchObject({
    kind: 'applied',
    ok: true,
    detail: 'applied to the running host, no restart needed',
  });
  await eventually('the work account gone from status', async () => !(await status()).has('telegram.work'));
  const workPolls = work.calls.length;
  family.message({ chat: SHARED, from: MEMBER, text: '@Andy still there?' });
  await eventually('the family bot answers again', () => texts(family).length === 2);
  await running.whenIdle();
  expect((await status()).get('telegram.family')?.state).toBe('connected');
  // The work bot left status only once its stop returned (its poll ended): no call of it can come after.
  expect(work.calls.length).toBe(workPolls);

  // Put back: the work bot starts again and answers its group.
  files.write(configText({ family, work }), files.read().hash);
  expect(await client.reloadConfig()).toMatchObject({
    kind: 'applied',
    ok: true,
    detail: 'applied to the running host, no restart needed',
  });
  await eventually('the work account connected again', async () =>
    (await status()).get('telegram.work')?.state === 'connected' ? true : undefined,
  );
  work.message({ chat: SHARED, from: MEMBER, text: '@Andy back?' });
  await eventually('the work bot answers again', () => texts(work).length === 2);
}, 60_000);
