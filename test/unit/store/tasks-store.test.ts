import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/store.ts';
import { createTasksStore, newTaskId } from '../../../host/store/tasks-store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const T0 = Date.parse('2025-03-01T12:00:00.000Z');
const HOUR = 3_600_000;
let store: Store;

beforeEach(() => {
  store = openStore({ file: path.join(tempDir(), 'carapace.db'), now: () => new Date(T0) });
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  store.groups.add({ id: 'work', channel: 'local', chatId: 'work', name: 'Work', isAdmin: false });
});
afterEach(() => store.close());

const hourly = { kind: 'interval', everyMs: HOUR } as const;
const add = (groupId: string, nextRunAt: number, prompt = 'say hi') =>
  store.tasks.insert({ groupId, prompt, schedule: hourly, nextRunAt, createdByRun: 7 });

describe('tasks store', () => {
  it('stores a new task as active with a short random id', () => {
    const t = add('family', T0 + HOUR);
    expect(t).toEqual({
      id: t.id,
      groupId: 'family',
      prompt: 'say hi',
      schedule: hourly,
      status: 'active',
      nextRunAt: T0 + HOUR,
      lastRunAt: null,
      createdByRun: 7,
      createdAt: T0,
      taint: { corruption: false, secret: false },
    });
    expect(t.id).toMatch(/^[a-z2-9]{8}$/);
    expect(store.tasks.get(t.id)).toEqual(t);
    expect(store.tasks.get('nope')).toBeUndefined();
  });

  it('draws another id when the first one is taken', () => {
    const draws = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
    const tasks = createTasksStore(
      store.db,
      () => new Date(T0),
      () => draws.shift() ?? 2,
    );
    const a = tasks.insert({
      groupId: 'family',
      prompt: 'a',
      schedule: hourly,
      nextRunAt: T0 + 1,
      createdByRun: null,
    });
    const b = tasks.insert({
      groupId: 'family',
      prompt: 'b',
      schedule: hourly,
      nextRunAt: T0 + 1,
      createdByRun: null,
    });
    expect(a.id).toBe(newTaskId(() => 0));
    expect(b.id).toBe(newTaskId(() => 1));
  });

  it('refuses a task for a group that does not exist, and drops tasks with their group', () => {
    expect(() => add('ghost', T0 + HOUR)).toThrow(/FOREIGN KEY/);
    const t = add('work', T0 + HOUR);
    store.groups.remove('work');
    expect(store.tasks.get(t.id)).toBeUndefined();
  });

  it('lists one group or all, open tasks first', () => {
    const a = add('family', T0 + 3 * HOUR);
    const b = add('work', T0 + HOUR);
    const c = add('family', T0 + 2 * HOUR);
    store.tasks.cancel(a.id);
    expect(store.tasks.list('family', 100).map((t) => t.id)).toEqual([c.id, a.id]);
    expect(
      store.tasks
        .list(undefined, 100)
        .map((t) => t.id)
        .sort(),
    ).toEqual([a.id, b.id, c.id].sort());
    expect(store.tasks.list(undefined, 100).at(-1)?.id).toBe(a.id);
    expect(store.tasks.list(undefined, 1)).toHaveLength(1);
    expect(store.tasks.openCount('family')).toBe(1);
  });

  it('finds due tasks in order and the earliest future one', () => {
    const late = add('family', T0 + 2 * HOUR);
    const early = add('work', T0 + HOUR);
    const paused = add('work', T0 + HOUR / 2);
    store.tasks.pause(paused.id);
    expect(store.tasks.due(T0)).toEqual([]);
    expect(store.tasks.earliestAfter(T0)).toBe(T0 + HOUR);
    expect(store.tasks.due(T0 + 2 * HOUR).map((t) => t.id)).toEqual([early.id, late.id]);
    expect(store.tasks.earliestAfter(T0 + HOUR)).toBe(T0 + 2 * HOUR);
    expect(store.tasks.earliestAfter(T0 + 2 * HOUR)).toBeUndefined();
  });

  it('advances a firing only from the due time it expects, once', () => {
    const t = add('family', T0 + HOUR);
    const after = { status: 'active', nextRunAt: T0 + 2 * HOUR, lastRunAt: T0 + HOUR } as const;
    expect(store.tasks.advance(t.id, T0 + HOUR, after)).toBe(true);
    expect(store.tasks.advance(t.id, T0 + HOUR, after)).toBe(false);
    expect(store.tasks.get(t.id)).toMatchObject({ nextRunAt: T0 + 2 * HOUR, lastRunAt: T0 + HOUR });
    expect(
      store.tasks.advance(t.id, T0 + 2 * HOUR, {
        status: 'completed',
        nextRunAt: null,
        lastRunAt: T0 + 2 * HOUR,
      }),
    ).toBe(true);
    expect(store.tasks.get(t.id)).toMatchObject({ status: 'completed', nextRunAt: null });
  });

  it('pauses, resumes and cancels only from the states that allow it', () => {
    const t = add('family', T0 + HOUR);
    expect(store.tasks.resume(t.id, T0 + 5)).toBe(false);
    expect(store.tasks.pause(t.id)).toBe(true);
    expect(store.tasks.get(t.id)).toMatchObject({ status: 'paused', nextRunAt: null });
    expect(store.tasks.pause(t.id)).toBe(false);
    expect(store.tasks.advance(t.id, T0 + HOUR, { status: 'active', nextRunAt: 1, lastRunAt: 1 })).toBe(
      false,
    );
    expect(store.tasks.resume(t.id, T0 + 2 * HOUR)).toBe(true);
    expect(store.tasks.get(t.id)).toMatchObject({ status: 'active', nextRunAt: T0 + 2 * HOUR });
    expect(store.tasks.cancel(t.id)).toBe(true);
    expect(store.tasks.cancel(t.id)).toBe(false);
    expect(store.tasks.resume(t.id, T0)).toBe(false);
  });

  it('edits prompt and schedule of a task still in the expected state', () => {
    const t = add('family', T0 + HOUR);
    const cron = { kind: 'cron', expr: '0 9 * * *' } as const;
    expect(store.tasks.edit(t.id, 'paused', { prompt: 'x' })).toBe(false);
    expect(store.tasks.edit(t.id, 'active', { prompt: 'new prompt' })).toBe(true);
    expect(store.tasks.get(t.id)).toMatchObject({
      prompt: 'new prompt',
      schedule: hourly,
      nextRunAt: T0 + HOUR,
    });
    expect(store.tasks.edit(t.id, 'active', { schedule: cron, nextRunAt: T0 + 9 * HOUR })).toBe(true);
    expect(store.tasks.get(t.id)).toMatchObject({
      prompt: 'new prompt',
      schedule: cron,
      nextRunAt: T0 + 9 * HOUR,
    });
  });

  it('holds its rules in the database against other writers', () => {
    const t = add('family', T0 + HOUR);
    const db = store.db;
    expect(() => db.prepare(`UPDATE tasks SET next_run_at = NULL WHERE id = ?`).run(t.id)).toThrow(/CHECK/);
    expect(() => db.prepare(`UPDATE tasks SET group_id = 'work' WHERE id = ?`).run(t.id)).toThrow(
      /cannot change/,
    );
    store.tasks.cancel(t.id);
    expect(() =>
      db.prepare(`UPDATE tasks SET status = 'active', next_run_at = 1 WHERE id = ?`).run(t.id),
    ).toThrow(/cannot change/);
    expect(() => db.prepare(`UPDATE tasks SET status = 'sleeping' WHERE id = ?`).run(t.id)).toThrow();
  });
});
