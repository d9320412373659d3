/**
 * An account's defaults for its groups in the running host: two Telegram bots (real grammY channels, each
 * on its own fake Bot API) through the real host wiring, the work bot's table giving its groups a daily cap
 * of $0. The work group is refused at the cap with the owner told which key to raise (the account's, not
 * `[gateway]`'s), the family group is answered as before; raising the cap in the account's table applies at
 * the reload, without a restart, and the work group is answered.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { EXAMPLE_CONFIG_FILE } from '../../../host/cli/cli-context.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { createConfigFileStore } from '../../../host/config/config-file-store.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { loadStartConfig } from '../../../host/config/safe-start.ts';
import { SPEND_CAP_LINE } from '../../../host/router/spend-notices.ts';
import { eventually } from '../../e2e/e2e-harness.ts';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/fake-telegram-api.ts';
import { botTokens, channelsToml, telegramAccountTables } from '../../helpers/account-channels.ts';
import { groupIdRunner } from '../../helpers/answering-runner.ts';
import { staticRunner } from '../../helpers/static-runner.ts';

const OWNER = 7170;
const MEMBER = { id: 7171, first_name: 'Mia' };
const CHAT = { id: -1007007, type: 'supergroup' as const, title: 'Both bots' };

let dir: string;
let host: RunningHost | undefined;
const fakes: FakeTelegram[] = [];

afterEach(async () => {
  await host?.stop('test over');
  host = undefined;
  for (const f of fakes.splice(0)) await f.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Both bots' tables, the work account with its own daily cap. */
function configText(family: FakeTelegram, work: FakeTelegram, workCapUsd: number): string {
  const tables = telegramAccountTables({ family, work }, OWNER);
  return channelsToml({ telegram: { ...tables, work: { ...tables.work, daily_cap_usd: workCapUsd } } });
}

it("refuses the work bot's group at its account's cap, naming the account's key, and applies a raised cap at the reload", async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-account-defaults-')));
  const paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  const family = await startFakeTelegram({ token: '311:family', botId: 311, username: 'family_bot' });
  fakes.push(family);
  const work = await startFakeTelegram({ token: '322:work', botId: 322, username: 'work_bot' });
  fakes.push(work);
  const tokens = botTokens({ family, work });
  fs.mkdirSync(paths.configDir, { recursive: true });
  fs.writeFileSync(paths.configFile, configText(family, work, 0));
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
  for (const [id, channel] of [
    ['fam', 'telegram.family'],
    ['wrk', 'telegram.work'],
  ] as const)
    running.store.groups.add({ id, channel, chatId: String(CHAT.id), name: id, isAdmin: false });
  const texts = (fake: FakeTelegram, chatId: number) =>
    fake
      .sent()
      .filter((s) => s.chat_id === chatId)
      .map((s) => s.text ?? '');

  work.message({ chat: CHAT, from: MEMBER, text: '@Andy standup?' });
  await eventually('the work group told it is at its cap', () =>
    texts(work, CHAT.id).includes(SPEND_CAP_LINE),
  );
  const notice = await eventually("the owner's notice in the work bot's private chat", () =>
    texts(work, OWNER).find((t) => t.includes('daily spend cap of $0.00 reached for group wrk')),
  );
  expect(notice).toContain('raise [channels.telegram.work].daily_cap_usd');
  family.message({ chat: CHAT, from: MEMBER, text: '@Andy dinner?' });
  await eventually('the family group answered', () => texts(family, CHAT.id).includes('answered as fam'));
  await running.whenIdle();
  expect(texts(work, CHAT.id)).toEqual([SPEND_CAP_LINE]);

  // Raised in the account's table: an edit inside a running account that applies at once.
  const files = createConfigFileStore({ configFile: paths.configFile });
  files.write(configText(family, work, 5), files.read().hash);
  expect(await createLocalClient(paths.socketFile).reloadConfig()).toMatchObject({
    kind: 'applied',
    ok: true,
    detail: 'applied to the running host, no restart needed',
  });
  work.message({ chat: CHAT, from: MEMBER, text: '@Andy standup now?' });
  await eventually('the work group answered', () => texts(work, CHAT.id).includes('answered as wrk'));
}, 60_000);
