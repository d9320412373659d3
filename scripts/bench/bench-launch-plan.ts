/**
 * The mount plan a run's `launch()` recomputes to check a pre-started container (the admin group, this
 * repository as its project, so every directory of it is walked): with the walk cache alone, one lstat per
 * directory (main's path), against the cache with its tree watch, a sync and then the plan (trusted: no
 * lstat). The two alternate turn by turn in one process, each with its own cache, so load hits both alike.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PROJECT_ROOT } from '../../host/cli/cli-context.ts';
import { planGroupMounts, type GroupMountPlan } from '../../host/containers/mounts/group-mounts.ts';
import { mergeBlockedPatterns } from '../../host/containers/mounts/mount-patterns.ts';
import {
  createShadowWalkCache,
  type ShadowWalkCache,
} from '../../host/containers/mounts/shadow-walk-cache.ts';
import { createTreeWatch } from '../../host/containers/mounts/tree-watch.ts';
import type { WalkSync } from '../../host/containers/mounts/tree-watch.ts';
import { isMain, median, printFigures, round } from './stats.ts';

const TURNS = 21;

export async function benchLaunchPlan(turns = TURNS): Promise<Record<string, number | string>> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-plan-'));
  const plan = (walkCache: ShadowWalkCache, walkSync?: WalkSync): GroupMountPlan =>
    planGroupMounts({
      dataDir,
      projectRoot: PROJECT_ROOT,
      group: { id: 'main', isAdmin: true },
      allowlistResult: {
        ok: true,
        allowlist: { allowedRoots: [], blockedPatterns: mergeBlockedPatterns([]), unusableRoots: [] },
      } as never,
      walkCache,
      ...(walkSync === undefined ? {} : { walkSync }),
    });
  const lstatOnly = createShadowWalkCache();
  const watched = createShadowWalkCache({
    watch: createTreeWatch({ canaryDir: path.join(dataDir, 'mount-shadow', 'watch-canary') }),
  });
  try {
    const dirs = (() => {
      plan(lstatOnly);
      return lstatOnly.size();
    })();
    // Arms the watches, then verifies: the third plan is the first a run would trust.
    for (let i = 0; i < 3; i++) plan(watched, await watched.sync());
    const before: number[] = [];
    const after: number[] = [];
    const syncs: number[] = [];
    const replays: number[] = [];
    let trusted = 0;
    for (let i = 0; i < turns; i++) {
      let t = performance.now();
      const a = plan(lstatOnly);
      before.push(performance.now() - t);
      t = performance.now();
      const synced = await watched.sync();
      const t2 = performance.now();
      syncs.push(t2 - t);
      const b = plan(watched, synced);
      after.push(performance.now() - t);
      replays.push(performance.now() - t2);
      if (watched.trusted(PROJECT_ROOT)) trusted++;
      if (JSON.stringify(a.mounts) !== JSON.stringify(b.mounts)) throw new Error('the two plans differ');
    }
    const [load1] = os.loadavg();
    return {
      'directories walked': dirs,
      'plan, lstat walk (main) ms, median': round(median(before), 2),
      'plan, watched: sync + plan ms, median': round(median(after), 2),
      'of which the sync ms, median': round(median(syncs), 2),
      'of which the trusted plan ms, median': round(median(replays), 2),
      'watched / lstat walk': round(median(after) / median(before), 3),
      'turns trusted': `${trusted} of ${turns}`,
      'load average (1 min)': round(load1 ?? Number.NaN, 1),
    };
  } finally {
    await watched.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url))
  printFigures('launch(): the mount plan of the admin group (this repository)', await benchLaunchPlan());
