/**
 * The daily summary through the real host wiring (startHost) on an injected clock: at `[admin] daily_summary`
 * the admin chat gets the day's spend from the gateway's records, once per day across a restart.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { resolvePaths, type CarapacePaths } from '../../../host/config/paths.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import { createSqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import { createEchoRunner } from '../../fakes/echo-runner.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { staticRunner } from '../../helpers/static-runner.ts';

const DAY = '2026-03-27';
let dir: string;
let paths: CarapacePaths;
let host: RunningHost | undefined;

beforeEach(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-summary-')));
  paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
});
afterEach(async () => {
  await host?.stop('test over');
  host = undefined;
  fs.rmSync(dir, { recursive: true, force: true });
});

const start = (clock: ReturnType<typeof fakeClock>['clock'], provider: Record<string, unknown> = {}) =>
  startHost({
    paths,
    config: hostConfigSchema.parse({
      assistant: { timezone: 'UTC' },
      admin: { daily_summary: '21:00' },
      gateway: { group_caps_usd: { family: 2 } },
      provider,
    }),
    logger: pino({ level: 'silent' }),
    redact: (s) => s,
    createRunner: staticRunner(createEchoRunner()),
    clock,
  });

const summaries = () =>
  (host as RunningHost).store.db
    .prepare(
      "SELECT idempotency_key AS key, text FROM outbox WHERE idempotency_key LIKE 'daily-summary:%' ORDER BY id",
    )
    .all() as { key: string; text: string }[];

it('sends the day’s spend to the admin chat at the set time, and only once that day after a restart', async () => {
  const time = fakeClock(Date.parse(`${DAY}T20:00:00Z`));
  host = await start(time.clock);
  host.store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  createSqliteUsageStore(host.store.db).recordUsage({
    runId: '7',
    groupId: 'family',
    day: DAY,
    model: 'gpt-4.1-mini',
    promptTokens: 1000,
    completionTokens: 100,
    costMicros: 1_234_567,
  });
  time.advanceTo(Date.parse(`${DAY}T20:59:59Z`));
  expect(summaries()).toEqual([]);
  time.advanceTo(Date.parse(`${DAY}T21:00:00Z`));
  expect(summaries()).toEqual([
    {
      key: `daily-summary:${DAY}`,
      text: [
        'Daily summary',
        `Spend up to ${DAY} (today: $1.2346)`,
        '',
        'Groups (today against the daily cap):',
        '- family: $1.2346 of $2.0000 (61 %)',
        '    gpt-4.1-mini: $1.2346 (1 req, 1,000 in / 100 out)',
        '- nothing spent: main',
        '',
        'Models (today):',
        '- gpt-4.1-mini: $1.2346',
        '',
        'Most expensive runs (today):',
        `- run 7 in family, ${DAY}: $1.2346 (gpt-4.1-mini)`,
      ].join('\n'),
    },
  ]);

  // Restarted the same day before the summary time would come again: it is not sent twice.
  await host.stop('restart');
  const later = fakeClock(Date.parse(`${DAY}T20:30:00Z`));
  host = await start(later.clock);
  later.advanceTo(Date.parse(`${DAY}T21:00:00Z`));
  expect(summaries().map((s) => s.key)).toEqual([`daily-summary:${DAY}`]);
  later.advanceTo(Date.parse('2026-03-28T21:00:00Z'));
  expect(summaries().map((s) => s.key)).toEqual([`daily-summary:${DAY}`, 'daily-summary:2026-03-28']);
});

it('says in the summary which models in use have no price, and which listed prices are over six months old', async () => {
  // A year after the table: its rows are stale, and a fallback model nobody priced is charged the ceiling.
  const day = '2027-06-15';
  const time = fakeClock(Date.parse(`${day}T20:00:00Z`));
  host = await start(time.clock, { fallback_models: ['gpt-9-mini'] });
  createSqliteUsageStore(host.store.db).recordUsage({
    runId: '8',
    groupId: 'main',
    day,
    model: 'seen-only-model',
    promptTokens: 10,
    completionTokens: 1,
    costMicros: 2100,
  });
  time.advanceTo(Date.parse(`${day}T21:00:00Z`));
  const text = summaries()[0]?.text ?? '';
  const notes = text.slice(text.indexOf('\nPrices:\n') + 1).split('\n');
  expect(notes[0]).toBe('Prices:');
  expect(notes.filter((l) => l.includes('has no price')).map((l) => l.split(' ')[1])).toEqual([
    'gpt-9-mini',
    'seen-only-model',
  ]);
  expect(notes).toContain(
    '- The listed price of gpt-4.1-mini is from 2025-10-01, more than six months old: check https://platform.openai.com/docs/pricing and set [gateway.prices."gpt-4.1-mini"] if it changed.',
  );
  expect(notes.some((l) => l.startsWith('- The price table is from '))).toBe(true);
});
