import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { folderUsage, quotaProblem, watchDiskQuota } from '../../../host/containers/mounts/disk-quota.ts';
import { quotaFolders } from '../../../host/containers/mounts/disk-quota-folders.ts';
import { fakeClock } from '../../helpers/fake-clock.ts';
import { waitFor } from '../../helpers/processes.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-quota-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * Watches `dir` alone under `label` with the given limit, its walks on a clock the test moves, collecting
 * the reasons it would stop a run and the bytes at each measure (the sentinel that a walk or a write was
 * seen).
 */
function watchDir(
  label: string,
  limitBytes: number,
  checkMs: number,
  deps?: Parameters<typeof watchDiskQuota>[3],
) {
  const time = fakeClock(0);
  const stops: string[] = [];
  const measured: number[] = [];
  const dispose = watchDiskQuota([{ label, path: dir, limitBytes }], checkMs, (r) => stops.push(r), {
    clock: time.clock,
    onMeasured: (_, usage) => measured.push(usage.bytes),
    ...deps,
  });
  /** The walk under way has finished and armed the next one. */
  const walked = (what: string) => waitFor(what, () => time.live().length === 1);
  return { stops, measured, dispose, time, walked };
}

describe('disk quotas', () => {
  it('counts the blocks files hold, in nested folders, and not what a sparse file only pretends to hold', async () => {
    fs.mkdirSync(path.join(dir, 'a', 'b'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'a', 'b', 'data'), Buffer.alloc(300 * 1024, 1));
    const sparse = fs.openSync(path.join(dir, 'sparse'), 'w');
    fs.ftruncateSync(sparse, 1024 * 1024 * 1024);
    fs.closeSync(sparse);
    const usage = await folderUsage(dir);
    expect(usage.entries).toBe(4);
    expect(usage.bytes).toBeGreaterThanOrEqual(300 * 1024);
    expect(usage.bytes).toBeLessThan(1024 * 1024);
  });

  it('says which folder is over its quota and by how much, and calls too many files over quota too', async () => {
    fs.writeFileSync(path.join(dir, 'big'), Buffer.alloc(2 * 1024 * 1024, 1));
    expect(await quotaProblem({ label: 'group folder', path: dir, limitBytes: 4 * 1024 * 1024 })).toBeNull();
    expect(
      await quotaProblem({
        label: 'group folder',
        path: dir,
        limitBytes: 1024 * 1024,
        setting: '[containers] group_quota_mb',
      }),
    ).toBe(
      `the group folder ${dir} holds 2.0 MB, over its quota of 1 MB ([containers] group_quota_mb); delete files there to make room, or raise the setting`,
    );
    for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(dir, `f${i}`), '');
    expect(await folderUsage(dir, 10)).toMatchObject({ entries: 11 });
  });

  it('stops once when a watched folder goes over its quota while the run lasts', async () => {
    const { stops, dispose, time, walked } = watchDir('session folder', 64 * 1024, 20);
    await walked('the first walk');
    time.advance(20);
    await walked('the second walk');
    expect(stops).toEqual([]);
    fs.writeFileSync(path.join(dir, 'history'), Buffer.alloc(256 * 1024, 1));
    await waitFor('the stop', () => stops.length > 0);
    // Stopped for good: no walk is armed, and time passing brings no second stop.
    expect(time.live()).toEqual([]);
    time.advance(200);
    dispose();
    expect(stops).toHaveLength(1);
    expect(stops[0]).toMatch(/^disk quota: the session folder \S+ holds/);
  });

  it('measures each write as it happens: a run goes over quota long before the next walk', async () => {
    fs.mkdirSync(path.join(dir, 'deep', 'er'), { recursive: true });
    // A walk only every hour: whatever stops the run here is the watch.
    const { stops, dispose, walked } = watchDir('group folder', 1024 * 1024, 3_600_000);
    try {
      // Let the first walk finish, then write in parallel into new and nested files, each under the quota.
      await walked('the first walk');
      for (let i = 0; i < 4; i++)
        fs.writeFileSync(path.join(dir, 'deep', 'er', `part-${i}`), Buffer.alloc(300 * 1024, 1));
      await waitFor('the stop', () => stops.length > 0);
      expect(stops).toEqual([
        expect.stringMatching(/^disk quota: the group folder \S+ holds 1\.[0-9] MB, over its quota of 1 MB/),
      ]);
    } finally {
      dispose();
    }
  });

  it('counts deleted files out again, so a folder that is tidied as it goes stays under quota', async () => {
    const { stops, dispose, walked, measured } = watchDir('group folder', 1024 * 1024, 3_600_000);
    const bytes = () => measured.at(-1) ?? 0;
    try {
      await walked('the first walk');
      for (let i = 0; i < 5; i++) {
        const file = path.join(dir, `chunk-${i}`);
        fs.writeFileSync(file, Buffer.alloc(600 * 1024, 1));
        await waitFor(`chunk ${i} measured`, () => bytes() >= 500 * 1024);
        fs.rmSync(file);
        await waitFor(`chunk ${i} counted out`, () => bytes() < 100 * 1024);
      }
      fs.writeFileSync(path.join(dir, 'last'), Buffer.alloc(1200 * 1024, 1));
      await waitFor('the stop', () => stops.length > 0);
      // Only the last file took it over: 5 × 600 KiB written and removed never added up.
      expect(stops[0]).toMatch(/holds 1\.[0-9] MB/);
    } finally {
      dispose();
    }
  });

  it('says when a folder cannot be watched, and still walks it', async () => {
    const problems: string[] = [];
    const { stops, dispose, time, walked } = watchDir('session folder', 64 * 1024, 20, {
      watch: () => {
        throw new Error('ENOSPC: System limit for number of file watchers reached');
      },
      onWatchError: (folder, err) => problems.push(`${folder.label}: ${err.message}`),
    });
    try {
      expect(problems).toEqual(['session folder: ENOSPC: System limit for number of file watchers reached']);
      await walked('the first walk');
      fs.writeFileSync(path.join(dir, 'history'), Buffer.alloc(256 * 1024, 1));
      // Nothing watches the folder: only the next walk can see the write.
      time.advance(20);
      await waitFor('the stop', () => stops.length > 0);
      expect(stops[0]).toMatch(/^disk quota: the session folder \S+ holds/);
    } finally {
      dispose();
    }
  });

  it('watches the group and session folders of a run with their own quotas', () => {
    const mounts = [
      {
        hostPath: '/d/groups/fam',
        containerPath: '/workspace/group',
        readOnly: false,
      },
      {
        hostPath: '/d/sessions/fam',
        containerPath: '/workspace/session',
        readOnly: false,
      },
      { hostPath: '/x', containerPath: '/workspace/extra/x', readOnly: false },
    ];
    expect(quotaFolders(mounts, { group_quota_mb: 2, session_quota_mb: 1 })).toEqual([
      {
        label: 'group folder',
        path: '/d/groups/fam',
        limitBytes: 2 * 1024 * 1024,
        setting: '[containers] group_quota_mb',
      },
      {
        label: 'session folder',
        path: '/d/sessions/fam',
        limitBytes: 1024 * 1024,
        setting: '[containers] session_quota_mb',
      },
    ]);
  });
});
