import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  createScheduler,
  MAX_TIMER_MS,
  type Scheduler,
  type TaskFiring,
} from '../../../host/scheduler/scheduler.ts';
import { createTaskDelivery, scheduledTaskMessage } from '../../../host/scheduler/task-delivery.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import type { TaskSchedule } from '../../../container-agent/src/protocol.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

let dbFile: string;
let store: Store;
let clock: ReturnType<typeof fakeClock>;
let notified: string[];
let firings: TaskFiring[];
let schedulers: Scheduler[];
const T0 = Date.parse('2025-03-29T00:00:00.000Z');

const silent = { info: () => undefined, warn: () => undefined, error: () => undefined };

function openTestStore(): Store {
  return openStore({ file: dbFile, now: () => new Date(clock.now()) });
}

function makeScheduler(
  over: { deliver?: (f: TaskFiring) => void; timezone?: string; retryMs?: number } = {},
): Scheduler {
  const delivery = createTaskDelivery({
    groups: store.groups,
    messages: store.messages,
    notify: (groupId) => notified.push(groupId),
  });
  const s = createScheduler({
    tasks: store.tasks,
    transaction: store.transaction,
    deliver: (f) => {
      firings.push(f);
      (over.deliver ?? delivery.deliver)(f);
    },
    onDelivered: delivery.onDelivered,
    timezone: () => over.timezone ?? 'Europe/Berlin',
    audit: store.audit,
    logger: silent,
    clock: clock.clock,
    retryMs: over.retryMs,
  });
  schedulers.push(s);
  return s;
}

function addTask(schedule: TaskSchedule, nextRunAt: number, prompt = 'water the plants', groupId = 'family') {
  return store.tasks.insert({ groupId, prompt, schedule, nextRunAt, createdByRun: null });
}

function messages(groupId = 'family') {
  return store.messages.after(groupId, 0);
}

const iso = (ms: number) => new Date(ms).toISOString();

beforeEach(() => {
  dbFile = path.join(tempDir(), 'carapace.db');
  clock = fakeClock(T0);
  notified = [];
  firings = [];
  schedulers = [];
  store = openTestStore();
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family-chat', name: 'Family', isAdmin: false });
  store.groups.add({ id: 'work', channel: 'local', chatId: 'work', name: 'Work', isAdmin: false });
});
afterEach(() => {
  for (const s of schedulers) s.stop();
  store.close();
});

describe('scheduler', () => {
  it('fires a Berlin cron task at 09:00 local time on both sides of the DST change', () => {
    const cron = { kind: 'cron', expr: '0 9 * * *' } as const;
    addTask(cron, Date.parse('2025-03-29T08:00:00Z'));
    makeScheduler().start();
    clock.advanceTo(Date.parse('2025-03-31T12:00:00Z'));
    expect(firings.map((f) => iso(f.firedAt))).toEqual([
      '2025-03-29T08:00:00.000Z',
      '2025-03-30T07:00:00.000Z',
      '2025-03-31T07:00:00.000Z',
    ]);
    expect(firings.map((f) => f.dueAt)).toEqual(firings.map((f) => f.firedAt));
    expect(messages()).toHaveLength(3);
  });

  it('stores a triggering message from the scheduler in the task group, then notifies the queue', () => {
    const t = addTask({ kind: 'interval', everyMs: HOUR }, T0 + HOUR, 'summarize the news');
    const s = createScheduler({
      tasks: store.tasks,
      transaction: store.transaction,
      deliver: (f) => store.messages.insert(scheduledTaskMessage(f, store.groups.get('family')!)),
      // Notified only after the commit: the message is already there for the run to read.
      onDelivered: (f) => notified.push(`${f.task.groupId}:${messages().length}`),
      timezone: () => 'UTC',
      logger: silent,
      clock: clock.clock,
    });
    schedulers.push(s);
    s.start();
    clock.advanceTo(T0 + HOUR);
    expect(messages()).toEqual([
      {
        id: expect.any(Number),
        groupId: 'family',
        channel: 'local',
        chatId: 'family-chat',
        externalId: `scheduled:${t.id}:${T0 + HOUR}`,
        senderId: 'scheduler',
        senderName: 'scheduler',
        text: '[scheduled task] summarize the news',
        sentAt: iso(T0 + HOUR),
        triggers: true,
      },
    ]);
    expect(notified).toEqual(['family:1']);
    expect(store.tasks.get(t.id)).toMatchObject({
      status: 'active',
      nextRunAt: T0 + 2 * HOUR,
      lastRunAt: T0 + HOUR,
    });
  });

  it('keeps one timer, armed for the earliest task and re-armed on every change', () => {
    const s = makeScheduler();
    s.start();
    expect(clock.live()).toEqual([]);
    expect(s.nextWakeAt()).toBeUndefined();
    const every = { kind: 'interval', everyMs: DAY } as const;
    addTask(every, T0 + 3 * HOUR);
    s.reschedule();
    const one = addTask(every, T0 + HOUR);
    s.reschedule();
    addTask(every, T0 + 2 * HOUR);
    s.reschedule();
    expect(clock.live().map((t) => t.at)).toEqual([T0 + HOUR]);
    const sooner = addTask(every, T0 + 30 * MIN);
    s.reschedule();
    expect(clock.live().map((t) => t.at)).toEqual([T0 + 30 * MIN]);
    store.tasks.cancel(sooner.id);
    s.reschedule();
    expect(clock.live().map((t) => t.at)).toEqual([T0 + HOUR]);
    expect(s.nextWakeAt()).toBe(T0 + HOUR);
    clock.advanceTo(T0 + HOUR);
    expect(firings.map((f) => f.task.id)).toEqual([one.id]);
    // After firing: the next earliest, which is the second task now (the fired one is due a day later).
    expect(clock.live().map((t) => t.at)).toEqual([T0 + 2 * HOUR]);
    store.tasks.pause(one.id);
    s.stop();
    expect(clock.live()).toEqual([]);
    s.reschedule();
    expect(clock.live()).toEqual([]);
  });

  it('waits for a task months away in steps no longer than a Node timer can hold', () => {
    const due = T0 + 60 * DAY;
    addTask({ kind: 'once', at: iso(due) }, due);
    const s = makeScheduler();
    s.start();
    expect(clock.live().map((t) => t.ms)).toEqual([MAX_TIMER_MS]);
    clock.advanceTo(T0 + MAX_TIMER_MS);
    expect(firings).toEqual([]);
    expect(clock.live().map((t) => t.ms)).toEqual([MAX_TIMER_MS]);
    clock.advanceTo(due - 1);
    expect(firings).toEqual([]);
    expect(clock.live().map((t) => t.at)).toEqual([due]);
    clock.advanceTo(due);
    expect(firings.map((f) => f.firedAt)).toEqual([due]);
  });

  it('completes a one-off task after it fired and then has nothing to wake for', () => {
    const t = addTask({ kind: 'once', at: iso(T0 + HOUR) }, T0 + HOUR);
    const s = makeScheduler();
    s.start();
    clock.advanceTo(T0 + 10 * DAY);
    expect(firings).toHaveLength(1);
    expect(store.tasks.get(t.id)).toMatchObject({
      status: 'completed',
      nextRunAt: null,
      lastRunAt: T0 + HOUR,
    });
    expect(s.nextWakeAt()).toBeUndefined();
    expect(clock.live()).toEqual([]);
  });

  it('fires each task missed while the host was down once at start, not once per missed period', () => {
    const interval = addTask({ kind: 'interval', everyMs: HOUR }, T0 + HOUR, 'interval');
    const cron = addTask({ kind: 'cron', expr: '0 * * * *' }, T0 + HOUR, 'cron');
    const once = addTask({ kind: 'once', at: iso(T0 + 2 * HOUR) }, T0 + 2 * HOUR, 'once');
    const future = addTask({ kind: 'interval', everyMs: DAY }, T0 + 2 * DAY, 'future');
    // Down from T0 for ten and a half hours: no scheduler ran.
    store.close();
    clock.jumpTo(T0 + 10.5 * HOUR);
    store = openTestStore();
    makeScheduler().start();
    expect(firings.map((f) => f.task.prompt).sort()).toEqual(['cron', 'interval', 'once']);
    expect(
      messages()
        .map((m) => m.text)
        .sort(),
    ).toEqual(['[scheduled task] cron', '[scheduled task] interval', '[scheduled task] once']);
    expect(store.tasks.get(interval.id)?.nextRunAt).toBe(T0 + 11 * HOUR);
    expect(store.tasks.get(cron.id)?.nextRunAt).toBe(T0 + 11 * HOUR);
    expect(store.tasks.get(once.id)?.status).toBe('completed');
    expect(store.tasks.get(future.id)?.lastRunAt).toBeNull();
    expect(notified).toEqual(['family', 'family', 'family']);
  });

  it('never fires a firing twice: a second scheduler on the same database finds nothing due', () => {
    addTask({ kind: 'interval', everyMs: HOUR }, T0 + HOUR);
    const first = makeScheduler();
    first.start();
    clock.advanceTo(T0 + HOUR);
    first.stop();
    // A restarted host at the same instant: the firing was committed with its message.
    store.close();
    store = openTestStore();
    makeScheduler().start();
    expect(firings).toHaveLength(1);
    expect(messages()).toHaveLength(1);
  });

  it('rolls back a firing whose delivery fails, retries it later and then fires it once', () => {
    const t = addTask({ kind: 'interval', everyMs: HOUR }, T0 + HOUR);
    const other = addTask({ kind: 'interval', everyMs: HOUR }, T0 + HOUR + 10 * MIN, 'other', 'work');
    let failing = true;
    const delivery = createTaskDelivery({
      groups: store.groups,
      messages: store.messages,
      notify: () => undefined,
    });
    const s = makeScheduler({
      retryMs: 5 * MIN,
      deliver: (f) => {
        delivery.deliver(f);
        // Thrown after the message was written: the transaction must take it back with the task's advance.
        if (failing && f.task.id === t.id) throw new Error('disk full');
      },
    });
    s.start();
    clock.advanceTo(T0 + HOUR);
    expect(messages()).toEqual([]);
    expect(store.tasks.get(t.id)).toMatchObject({ nextRunAt: T0 + HOUR, lastRunAt: null });
    expect(clock.live().map((x) => x.at)).toEqual([T0 + HOUR + 5 * MIN]);
    failing = false;
    clock.advanceTo(T0 + HOUR + 5 * MIN);
    expect(messages()).toHaveLength(1);
    expect(store.tasks.get(t.id)).toMatchObject({ nextRunAt: T0 + 2 * HOUR, lastRunAt: T0 + HOUR + 5 * MIN });
    // Another group's task was never held up by the failing one.
    clock.advanceTo(T0 + HOUR + 10 * MIN);
    expect(store.tasks.get(other.id)?.lastRunAt).toBe(T0 + HOUR + 10 * MIN);
    const failures = store.audit.tail(20).filter((r) => r.decision === 'failed');
    expect(failures).toHaveLength(1);
  });

  it('passes the taint of the run that wrote a task on to its group when it fires, and only then', () => {
    store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'Admin', isAdmin: true });
    const planted = store.tasks.insert({
      groupId: 'main',
      prompt: 'planted',
      schedule: { kind: 'once', at: iso(T0 + HOUR) },
      nextRunAt: T0 + HOUR,
      createdByRun: 9,
      taint: { corruption: true, secret: false },
    });
    addTask({ kind: 'once', at: iso(T0 + 30 * MIN) }, T0 + 30 * MIN, 'clean', 'main');
    makeScheduler().start();
    clock.advanceTo(T0 + 30 * MIN);
    expect(store.groups.get('main')?.taint).toEqual({ corruption: false, secret: false });
    clock.advanceTo(T0 + HOUR);
    expect(messages('main').map((m) => m.text)).toEqual([
      '[scheduled task] clean',
      '[scheduled task] planted',
    ]);
    expect(store.groups.get('main')?.taint).toEqual({ corruption: true, secret: false });
    expect(store.tasks.get(planted.id)?.status).toBe('completed');
  });

  it('does not fire paused or cancelled tasks, and fires a resumed one', () => {
    const paused = addTask({ kind: 'interval', everyMs: HOUR }, T0 + HOUR, 'paused');
    const cancelled = addTask({ kind: 'interval', everyMs: HOUR }, T0 + HOUR, 'cancelled');
    const s = makeScheduler();
    s.start();
    store.tasks.pause(paused.id);
    store.tasks.cancel(cancelled.id);
    s.reschedule();
    expect(clock.live()).toEqual([]);
    clock.advanceTo(T0 + 3 * HOUR);
    expect(firings).toEqual([]);
    store.tasks.resume(paused.id, T0 + 4 * HOUR);
    s.reschedule();
    clock.advanceTo(T0 + 4 * HOUR);
    expect(firings.map((f) => f.task.prompt)).toEqual(['paused']);
  });

  it('audits every firing', () => {
    const t = addTask({ kind: 'once', at: iso(T0 + HOUR) }, T0 + HOUR);
    makeScheduler().start();
    clock.advanceTo(T0 + HOUR);
    const rows = store.audit.tail(10).filter((r) => r.operation === 'task.fire');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ groupId: 'family', decision: 'fired' });
    expect(JSON.parse(rows[0]?.details ?? '{}')).toEqual({
      taskId: t.id,
      dueAt: T0 + HOUR,
      nextRunAt: null,
      status: 'completed',
    });
  });
});
