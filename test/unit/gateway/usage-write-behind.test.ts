import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCapStatus } from '../../../host/gateway/spend/cap-status.ts';
import { createSpendCap } from '../../../host/gateway/spend/spend-cap.ts';
import { createSqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import type { UsageRecord } from '../../../host/gateway/spend/usage-store.ts';
import { createWriteBehindUsageStore } from '../../../host/gateway/spend/usage-write-behind.ts';
import { openUsageSettlements } from '../../../host/app/usage-settlements.ts';
import { createLogger } from '../../../host/logging/create-logger.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { reply } from '../../fakes/fake-provider.ts';
import { BERLIN_DAY, startHarness } from './gateway-harness.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

const DAY = '2024-03-11';
const opened: { store: Store; dir: string }[] = [];

afterEach(() => {
  for (const { store, dir } of opened.splice(0)) {
    if (store.db.open) store.db.close();
    removeTempDir(dir);
  }
});

function rig() {
  const dir = makeTempDir();
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  opened.push({ store, dir });
  const clock = fakeClock(Date.parse(`${DAY}T12:00:00Z`));
  const durable = createSqliteUsageStore(store.db);
  // A switch the test flips to make the database refuse the group commit.
  const failing = { now: false };
  const errors: number[] = [];
  const usage = createWriteBehindUsageStore({
    durable: {
      ...durable,
      recordRows(rows) {
        if (failing.now) throw new Error('disk I/O error');
        durable.recordRows(rows);
      },
    },
    clock: clock.clock,
    intervalMs: 100,
    onFlushError: (_error, rows) => errors.push(rows),
  });
  const table = (group = 'g') =>
    store.db
      .prepare(
        'SELECT COALESCE(SUM(cost_micros), 0) AS c, COALESCE(SUM(requests), 0) AS n FROM gateway_usage WHERE group_id = ?',
      )
      .get(group) as { c: number; n: number };
  return { store, clock, usage, failing, errors, table };
}

const record = (costMicros: number, runId = 'run-1', groupId = 'g'): UsageRecord => ({
  runId,
  groupId,
  day: DAY,
  model: 'm',
  promptTokens: 10,
  completionTokens: 5,
  costMicros,
});

describe('spend settled behind the requests, in group commits', () => {
  it('counts a queued settlement toward the cap before it is written', async () => {
    const { usage, table } = rig();
    const cap = createSpendCap({
      config: () => ({ daily_cap_usd: 0.001, group_caps_usd: {} }),
      usageStore: usage,
      onNotifyError: () => undefined,
    });
    const first = await cap.reserve('g', DAY, 400);
    if (!first.ok) throw new Error('the first request should be admitted');
    await first.reservation.settle(() => {
      usage.recordUsage(record(1_000));
      return 1_000;
    });
    expect(table().c).toBe(0);
    expect(usage.pendingRows()).toBe(1);
    expect(usage.spentTodayMicros('g', DAY)).toBe(1_000);
    const second = await cap.reserve('g', DAY, 1);
    expect(second).toMatchObject({ ok: false, spentMicros: 1_000, reservedMicros: 0 });
    // The host's check before a run starts reads the same queue.
    const status = createCapStatus({
      config: () => ({ daily_cap_usd: 0.001, group_caps_usd: {} }),
      spentTodayMicros: (groupId, day) => usage.spentTodayMicros(groupId, day),
      timezone: () => 'UTC',
      now: () => Date.parse(`${DAY}T12:00:00Z`),
    });
    expect(status('g').reached).toBe(true);
  });

  it('writes everything queued in one interval as one commit, merged per run and model, counted once', () => {
    const { usage, clock, table } = rig();
    const changes = () => usage.spentTodayMicros('g', DAY);
    usage.recordUsage(record(100));
    usage.recordUsage(record(200));
    usage.recordUsage(record(300, 'run-2'));
    expect(changes()).toBe(600);
    clock.advance(99);
    expect(table()).toEqual({ c: 0, n: 0 });
    clock.advance(1);
    expect(table()).toEqual({ c: 600, n: 3 });
    expect(usage.pendingRows()).toBe(0);
    // Written and no longer queued: the durable sum alone, not twice.
    expect(changes()).toBe(600);
    usage.recordUsage(record(50));
    expect(changes()).toBe(650);
    clock.advance(100);
    expect(table()).toEqual({ c: 650, n: 4 });
    expect(changes()).toBe(650);
    expect(clock.live()).toHaveLength(0);
  });

  it('keeps a settlement that failed to write counted (fail closed) and writes it at the next interval', () => {
    const { usage, clock, failing, errors, table } = rig();
    usage.recordUsage(record(700));
    failing.now = true;
    clock.advance(100);
    expect(errors).toEqual([1]);
    expect(table().c).toBe(0);
    expect(usage.spentTodayMicros('g', DAY)).toBe(700);
    // Another settlement while the database refuses: queued with the first.
    usage.recordUsage(record(300));
    clock.advance(100);
    expect(errors).toEqual([1, 1]);
    expect(usage.spentTodayMicros('g', DAY)).toBe(1_000);
    failing.now = false;
    clock.advance(100);
    expect(table()).toEqual({ c: 1_000, n: 2 });
    expect(usage.spentTodayMicros('g', DAY)).toBe(1_000);
    expect(usage.pendingRows()).toBe(0);
  });

  it('writes what is queued when the store closes, and refuses settlements after', () => {
    const { store, usage, table } = rig();
    usage.recordUsage(record(400));
    usage.close();
    expect(table().c).toBe(400);
    expect(() => usage.recordUsage(record(1))).toThrow(/closed/);
    store.close();
  });

  it('says what is lost when the last write at close fails', () => {
    const { usage, failing } = rig();
    usage.recordUsage(record(400));
    failing.now = true;
    expect(() => usage.close()).toThrow(/1 spend settlement row\(s\) could not be written at shutdown/);
  });

  it("the host's usage store writes its queue as the host closes it, before the database", () => {
    const dir = makeTempDir();
    const file = path.join(dir, 'carapace.db');
    try {
      const store = openStore({ file });
      const closers: (() => void)[] = [() => store.close()];
      const usage = openUsageSettlements({
        store,
        clock: fakeClock(0).clock,
        logger: createLogger({ level: 'silent', redact: (s) => s }),
        opened: (_name, close) => closers.push(close),
      });
      usage.recordUsage(record(900));
      expect(usage.pendingRows()).toBe(1);
      for (const close of closers.reverse()) close();
      const again = openStore({ file });
      expect(createSqliteUsageStore(again.db).spentTodayMicros('g', DAY)).toBe(900);
      again.close();
    } finally {
      removeTempDir(dir);
    }
  });

  it('status totals write the queue first, so they agree with admission', () => {
    const { usage, table } = rig();
    usage.recordUsage(record(120));
    expect(usage.totalsForRun('run-1')).toEqual([
      { groupId: 'g', model: 'm', requests: 1, promptTokens: 10, completionTokens: 5, costMicros: 120 },
    ]);
    expect(table().c).toBe(120);
    expect(usage.spentTodayMicros('g', DAY)).toBe(120);
  });

  it("through the gateway: a request's cost counts before it is written, and is written as the run's keys die", async () => {
    const { usage, clock, table } = rig();
    const h = await startHarness({
      usageStore: usage,
      clock: clock.clock,
      gateway: { prices: { 'fake-model': { input_per_mtok_usd: 2, output_per_mtok_usd: 10 } } },
    });
    try {
      h.fake.script(reply.text('counted', { usage: { promptTokens: 1000, completionTokens: 500 } }));
      await h.client.chat.completions.create({
        model: 'fake-model',
        messages: [{ role: 'user', content: 'a' }],
      });
      const day = BERLIN_DAY;
      // 1000 × $2/Mtok + 500 × $10/Mtok = 7000 micro-dollars, counted at once, not yet in the table.
      expect(usage.spentTodayMicros('group-a', day)).toBe(7_000);
      expect(table('group-a')).toEqual({ c: 0, n: 0 });
      h.run.revoke();
      expect(table('group-a')).toEqual({ c: 7_000, n: 1 });
      expect(usage.spentTodayMicros('group-a', day)).toBe(7_000);
    } finally {
      await h.close();
    }
  });
});
