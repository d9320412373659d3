import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRetentionRunner } from '../../../host/store/retention-runner.ts';
import type { RetentionPolicy } from '../../../host/store/retention-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { chatIdOf, groupIdOf, seedHistory } from '../../helpers/seed-history.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const DAY = 86_400_000;
const END = Date.parse('2026-03-31T00:00:00Z');
const KEEP_DAYS = 10;
const CUTOFF = new Date(END - KEEP_DAYS * DAY).toISOString();
const POLICY: RetentionPolicy = {
  outboxDays: KEEP_DAYS,
  messagesDays: KEEP_DAYS,
  runsDays: KEEP_DAYS,
  usageDays: KEEP_DAYS,
};

let store: Store;
let clock: number;

const WAITING = 'waiting';

/**
 * What a month of history holds that retention must leave alone, planted 25 days back among what it may
 * remove: the history before and after it is seeded in time order, as a host writes it.
 */
function plantWhatMustStay(s: Store) {
  const say = (externalId: string, text: string, triggers: boolean) =>
    s.messages.insert({
      groupId: WAITING,
      channel: 'local',
      chatId: WAITING,
      externalId,
      senderId: 'u1',
      senderName: 'Ann',
      text,
      sentAt: new Date(clock).toISOString(),
      triggers,
    }) as number;
  // A reply that never went out: pending for 25 days, it is still owed.
  s.outbox.add({
    idempotencyKey: 'owed',
    groupId: groupIdOf(0),
    channel: 'local',
    chatId: chatIdOf(0),
    runId: null,
    text: 'still owed',
  });
  // A dead letter of the same age: the owner was told; it goes with the delivered ones.
  s.outbox.add({
    idempotencyKey: 'dead',
    groupId: groupIdOf(0),
    channel: 'local',
    chatId: chatIdOf(0),
    runId: null,
    text: 'chat gone',
  });
  s.outbox.markDead(s.outbox.highWater('local', chatIdOf(0)), 'chat gone');
  // A group with a trigger waiting since then: it and the context before it are what its next run reads.
  s.groups.add({ id: WAITING, channel: 'local', chatId: WAITING, name: 'Waiting', isAdmin: false });
  const context = say('ctx', 'the plants need water', false);
  const waiting = say('ask', '@Andy still there?', true);
  // An old run that scheduled a task which is still active, and a run the host still counts as running.
  const creator = s.runs.start(groupIdOf(2), 1, 0);
  s.runs.finish(creator.id, 'succeeded', 'completed');
  s.tasks.insert({
    groupId: groupIdOf(2),
    prompt: 'water the plants',
    schedule: { kind: 'interval', everyMs: 86_400_000 },
    nextRunAt: END + DAY,
    createdByRun: creator.id,
  });
  const running = s.runs.start(groupIdOf(3), 1, 0);
  return { context, waiting, creator: creator.id, running: running.id };
}

const count = (s: Store, sql: string, ...args: unknown[]) =>
  (s.db.prepare(sql).get(...args) as { n: number }).n;

const SHAPE = { groups: 6, messagesPerDay: 10, triggerEvery: 5, channel: 'local' };
let kept: ReturnType<typeof plantWhatMustStay>;

beforeEach(() => {
  const file = path.join(tempDir(), 'carapace.db');
  const plantedAt = END - 25 * DAY;
  seedHistory(file, { ...SHAPE, days: 5, endAt: plantedAt });
  clock = plantedAt;
  store = openStore({ file, now: () => new Date(clock) });
  kept = plantWhatMustStay(store);
  store.close();
  seedHistory(file, { ...SHAPE, days: 25, endAt: END });
  clock = END;
  store = openStore({ file, now: () => new Date(clock) });
});
afterEach(() => store.close());

function runner() {
  return createRetentionRunner({
    retention: store.retention,
    audit: store.audit,
    policy: POLICY,
    batchSize: 37,
    intervalMs: 3_600_000,
    logger: pino({ level: 'silent' }),
  });
}

describe('retention', () => {
  it('removes the history the policy says and nothing a pending reply, an open task or the audit needs', async () => {
    const before = {
      audit: count(store, 'SELECT COUNT(*) AS n FROM audit'),
      auditMaxId: count(store, 'SELECT MAX(id) AS n FROM audit'),
      youngMessages: count(store, 'SELECT COUNT(*) AS n FROM messages WHERE received_at >= ?', CUTOFF),
      youngRuns: count(store, 'SELECT COUNT(*) AS n FROM runs WHERE started_at >= ?', CUTOFF),
      youngOutbox: count(store, 'SELECT COUNT(*) AS n FROM outbox WHERE created_at >= ?', CUTOFF),
      cost: count(store, 'SELECT SUM(cost_micros) AS n FROM gateway_usage'),
    };

    const removed = await runner().runOnce();

    // Delivered and dead replies older than the cutoff are gone with their platform ids; the owed one stays.
    expect(
      count(store, "SELECT COUNT(*) AS n FROM outbox WHERE created_at < ? AND status != 'pending'", CUTOFF),
    ).toBe(0);
    expect(store.outbox.pendingCount()).toBe(1);
    expect(store.outbox.due().map((o) => o.idempotencyKey)).toEqual(['owed']);
    expect(count(store, 'SELECT COUNT(*) AS n FROM outbox WHERE created_at >= ?', CUTOFF)).toBe(
      before.youngOutbox,
    );
    expect(
      count(
        store,
        'SELECT COUNT(*) AS n FROM outbox_platform_ids p WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = p.outbox_id)',
      ),
    ).toBe(0);
    // Old messages are gone, except in the group whose trigger is still waiting.
    expect(
      count(
        store,
        'SELECT COUNT(*) AS n FROM messages WHERE received_at < ? AND group_id != ?',
        CUTOFF,
        WAITING,
      ),
    ).toBe(0);
    expect(store.messages.groupsWithPendingTriggers()).toEqual([WAITING]);
    expect(store.messages.after(WAITING, 0).map((m) => m.id)).toEqual([kept.context, kept.waiting]);
    expect(count(store, 'SELECT COUNT(*) AS n FROM messages WHERE received_at >= ?', CUTOFF)).toBe(
      before.youngMessages,
    );
    // Old finished runs are gone, except the one an open task came from; the running one stays.
    expect(
      count(
        store,
        'SELECT COUNT(*) AS n FROM runs WHERE started_at < ? AND id NOT IN (?, ?)',
        CUTOFF,
        kept.creator,
        kept.running,
      ),
    ).toBe(0);
    expect(store.runs.get(kept.creator)?.status).toBe('succeeded');
    expect(store.runs.running().map((r) => r.id)).toEqual([kept.running]);
    expect(store.tasks.taintedOf(groupIdOf(2))).toEqual([]);
    expect(count(store, 'SELECT COUNT(*) AS n FROM runs WHERE started_at >= ?', CUTOFF)).toBe(
      before.youngRuns,
    );
    // Old usage is rolled up, not lost: the same spend, per group and day.
    expect(count(store, 'SELECT COUNT(*) AS n FROM gateway_usage WHERE day < ?', CUTOFF.slice(0, 10))).toBe(
      0,
    );
    expect(
      count(store, 'SELECT SUM(cost_micros) AS n FROM gateway_usage') +
        count(store, 'SELECT SUM(cost_micros) AS n FROM gateway_usage_daily'),
    ).toBe(before.cost);
    expect(count(store, 'SELECT COUNT(*) AS n FROM gateway_usage_daily')).toBe(6 * 20);
    // The audit log is whole, plus one row saying what the pass removed.
    expect(count(store, 'SELECT COUNT(*) AS n FROM audit')).toBe(before.audit + 1);
    const last = store.audit.tail(1)[0];
    expect(last?.operation).toBe('retention.prune');
    expect(JSON.parse(last?.details ?? '{}')).toMatchObject({ removed });
    expect(count(store, 'SELECT COUNT(*) AS n FROM audit WHERE id <= ?', before.auditMaxId)).toBe(
      before.audit,
    );
    expect(removed.outbox).toBeGreaterThan(0);
    expect(removed.messages).toBeGreaterThan(0);
    expect(removed.runs).toBeGreaterThan(0);
    expect(removed.usage).toBeGreaterThan(0);
  });

  it('removes nothing more on a second pass, and writes no audit row for it', async () => {
    await runner().runOnce();
    const audit = count(store, 'SELECT COUNT(*) AS n FROM audit');
    expect(await runner().runOnce()).toEqual({ outbox: 0, messages: 0, runs: 0, usage: 0 });
    expect(count(store, 'SELECT COUNT(*) AS n FROM audit')).toBe(audit);
  });

  it('keeps everything of a kind whose days are 0', async () => {
    const messages = count(store, 'SELECT COUNT(*) AS n FROM messages');
    const removed = await createRetentionRunner({
      retention: store.retention,
      audit: store.audit,
      policy: { ...POLICY, messagesDays: 0 },
      batchSize: 100,
      intervalMs: 3_600_000,
      logger: pino({ level: 'silent' }),
    }).runOnce();
    expect(removed.messages).toBe(0);
    expect(removed.runs).toBeGreaterThan(0);
    expect(count(store, 'SELECT COUNT(*) AS n FROM messages')).toBe(messages);
  });

  it('prunes on its timer: first five minutes after start, then every interval, and not after stop', async () => {
    const timers: { fn: () => void; ms: number; cancelled: boolean }[] = [];
    const r = createRetentionRunner({
      retention: store.retention,
      audit: store.audit,
      policy: POLICY,
      batchSize: 100,
      intervalMs: 3_600_000,
      logger: pino({ level: 'silent' }),
      clock: {
        setTimer(fn, ms) {
          const t = { fn, ms, cancelled: false };
          timers.push(t);
          return () => (t.cancelled = true);
        },
      },
    });
    const old = () => count(store, 'SELECT COUNT(*) AS n FROM runs WHERE started_at < ?', CUTOFF);
    r.start();
    expect(timers.map((t) => t.ms)).toEqual([300_000]);
    expect(old()).toBeGreaterThan(2);
    timers[0]?.fn();
    // The pass the timer started: runOnce hands out the one already running.
    await r.runOnce();
    expect(old()).toBe(2);
    expect(timers[1]?.ms).toBe(3_600_000);
    await r.stop();
    expect(timers[1]?.cancelled).toBe(true);
  });
});
