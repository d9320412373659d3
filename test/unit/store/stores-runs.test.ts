import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let clock: number;
let store: Store;

beforeEach(() => {
  clock = Date.parse('2025-03-01T12:00:00.000Z');
  store = openStore({ file: path.join(tempDir(), 'carapace.db'), now: () => new Date(clock) });
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  store.groups.add({ id: 'work', channel: 'local', chatId: 'work', name: 'Work', isAdmin: false });
});
afterEach(() => store.close());

describe('runs store', () => {
  it('starts a run as running with what it was given', () => {
    const run = store.runs.start('family', 1, 42);
    expect(run).toEqual({
      id: run.id,
      groupId: 'family',
      attempt: 1,
      status: 'running',
      givenThrough: 42,
      ackedThrough: 0,
      replied: false,
      repliedThrough: 0,
      lastReplyFinal: false,
      exitReason: null,
      startedAt: new Date(clock).toISOString(),
      endedAt: null,
    });
    expect(store.runs.get(run.id)).toEqual(run);
    expect(store.runs.get(run.id + 1000)).toBeUndefined();
  });

  it('refuses a run for a group that does not exist', () => {
    expect(() => store.runs.start('ghost', 1, 0)).toThrow(/FOREIGN KEY/);
  });

  it('moves given and acknowledged marks only forward, and records a reply', () => {
    const { id } = store.runs.start('family', 1, 10);
    store.runs.markGiven(id, 15);
    store.runs.markGiven(id, 12);
    store.runs.markAcked(id, 9);
    store.runs.markAcked(id, 3);
    store.runs.markReplied(id, 9, true);
    expect(store.runs.get(id)?.lastReplyFinal).toBe(true);
    store.runs.markReplied(id, 4);
    expect(store.runs.get(id)).toMatchObject({
      givenThrough: 15,
      ackedThrough: 9,
      replied: true,
      repliedThrough: 9,
      // A progress note after the answer: the group's last read is unfinished again.
      lastReplyFinal: false,
      status: 'running',
    });
  });

  it('finishes a run once; later finishes of the same run change nothing', () => {
    const { id } = store.runs.start('family', 1, 10);
    clock += 7_000;
    store.runs.finish(id, 'succeeded', 'done');
    const finished = store.runs.get(id);
    expect(finished).toMatchObject({
      status: 'succeeded',
      exitReason: 'done',
      endedAt: new Date(clock).toISOString(),
    });

    clock += 1_000;
    store.runs.finish(id, 'interrupted', 'host restarted');
    store.runs.finish(id, 'failed', 'late error');
    expect(store.runs.get(id)).toEqual(finished);
  });

  it('lists running runs in start order and recent runs newest first', () => {
    const a = store.runs.start('family', 1, 1).id;
    const b = store.runs.start('work', 1, 2).id;
    const c = store.runs.start('family', 2, 3).id;
    store.runs.finish(b, 'failed', 'container exited 1');
    expect(store.runs.running().map((r) => r.id)).toEqual([a, c]);
    expect(store.runs.recent(2).map((r) => r.id)).toEqual([c, b]);
    expect(store.runs.recent(10).map((r) => [r.id, r.status])).toEqual([
      [c, 'running'],
      [b, 'failed'],
      [a, 'running'],
    ]);
  });
});
