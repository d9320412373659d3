import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergeBlockedPatterns } from '../../../host/containers/mounts/mount-patterns.ts';
import type { ShadowPlan } from '../../../host/containers/mounts/mount-shadows.ts';
import { planShadows } from '../../../host/containers/mounts/mount-shadows.ts';
import type { ShadowWalkCache } from '../../../host/containers/mounts/shadow-walk-cache.ts';
import { createShadowWalkCache, RACY_WINDOW_MS } from '../../../host/containers/mounts/shadow-walk-cache.ts';
import { createTreeWatch } from '../../../host/containers/mounts/tree-watch.ts';

// The walk cache with a real tree watch (a worker's inotify) over a real tree: an unchanged, watched tree
// is replayed without a look, and every change made before a sync, however late, sends it back to the walk.

let tmp: string;
let root: string;
let deep: string;
let reads: string[];
let cache: ShadowWalkCache;

const sources = { emptyDir: '/shadow/empty-dir', emptyFile: '/shadow/empty-file' };

function write(relative: string, text = ''): void {
  const file = path.join(root, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-watch-')));
  root = path.join(tmp, 'project');
  deep = path.join(root, 'apps', 'web', 'config');
  write('.env', 'TOKEN=secret');
  write('apps/web/config/settings.json', '{}');
  write('apps/web/src/index.ts', 'export {}');
  write('node_modules/pkg/index.js', '');
  reads = [];
  cache = createShadowWalkCache({
    // Far enough ahead that every directory just created counts as old enough to keep.
    now: () => Date.now() + 10 * RACY_WINDOW_MS,
    // No sync may time out here: a late one only means a walk, which the tests would read as a failure.
    watch: createTreeWatch({ canaryDir: path.join(tmp, 'data', 'canary'), syncTimeoutMs: 60_000 }),
  });
});

afterEach(async () => {
  await cache.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A run's plan: a sync, then the walk at once. */
async function plan(): Promise<ShadowPlan> {
  const synced = await cache.sync();
  return planWith(synced === undefined ? {} : { synced });
}

function planWith(extra: { synced?: Awaited<ReturnType<ShadowWalkCache['sync']>> }): ShadowPlan {
  return planShadows({
    hostDir: root,
    containerDir: '/workspace/project',
    patterns: mergeBlockedPatterns([]),
    sources,
    cache,
    readDir: (dir) => {
      reads.push(dir);
      return fs.readdirSync(dir, { withFileTypes: true });
    },
    ...extra,
  });
}

function uncached(): ShadowPlan {
  return planShadows({
    hostDir: root,
    containerDir: '/workspace/project',
    patterns: mergeBlockedPatterns([]),
    sources,
  });
}

/** Walks until the tree is trusted: the first walk arms the watches, the next verifies, the third trusts. */
async function untilTrusted(): Promise<ShadowPlan> {
  await plan();
  await plan();
  reads = [];
  const p = await plan();
  expect(cache.trusted(root)).toBe(true);
  expect(reads).toEqual([]);
  return p;
}

function shadowPaths(p: ShadowPlan): string[] {
  return p.shadows.map((s) => s.containerPath);
}

describe('the walk cache with a tree watch', () => {
  it('replays a watched, unchanged tree without a look, and gives the same plan as a fresh walk', async () => {
    expect(await untilTrusted()).toEqual(uncached());
  });

  it('walks again when a .env is planted deep in the tree just before the sync, and hides it', async () => {
    await untilTrusted();
    fs.writeFileSync(path.join(deep, '.env'), 'TOKEN=late');
    reads = [];
    const p = await plan();
    expect(cache.trusted(root)).toBe(false);
    expect(reads).toEqual([deep]);
    expect(shadowPaths(p)).toContain('/workspace/project/apps/web/config/.env');
    expect(p).toEqual(uncached());
  });

  it('refuses to trust a tree where a directory was swapped for a symlink out of the mount after it warmed', async () => {
    const outside = path.join(tmp, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, '.env'), 'TOKEN=outside');
    write('apps/web/config/.env.local', 'TOKEN=inside');
    const before = await untilTrusted();
    fs.renameSync(deep, path.join(tmp, 'moved-away'));
    fs.symlinkSync(outside, deep);
    const p = await plan();
    expect(cache.trusted(root)).toBe(false);
    // The symlink is not followed: the plan (the container's fingerprint) is another one than the warmed
    // container's, whose shadow of the moved .env.local would now cover the link.
    expect(p).toEqual(uncached());
    expect(shadowPaths(before)).toContain('/workspace/project/apps/web/config/.env.local');
    expect(shadowPaths(p)).not.toContain('/workspace/project/apps/web/config/.env.local');
  });

  it('does not trust a tree after any event in it, even one that changes no name', async () => {
    await untilTrusted();
    fs.writeFileSync(path.join(deep, 'settings.json'), '{"changed":true}');
    await plan();
    expect(cache.trusted(root)).toBe(false);
    // The walk that found it unchanged verifies it again, so the next one is trusted.
    reads = [];
    await plan();
    expect(cache.trusted(root)).toBe(true);
    expect(reads).toEqual([]);
  });

  it('watches a folder that was removed and made again anew (its inode number can come back)', async () => {
    await untilTrusted();
    fs.rmSync(deep, { recursive: true });
    fs.mkdirSync(deep);
    // Walked, verified, trusted again: with the new folder's watch in place.
    await untilTrusted();
    fs.writeFileSync(path.join(deep, '.env'), 'TOKEN=late');
    const p = await plan();
    expect(cache.trusted(root)).toBe(false);
    expect(shadowPaths(p)).toContain('/workspace/project/apps/web/config/.env');
  });

  it('walks with lstats when the plan has no sync, and when the watch is gone', async () => {
    await untilTrusted();
    planWith({});
    expect(cache.trusted(root)).toBe(false);
    await cache.close();
    expect(await cache.sync()).toBeUndefined();
    fs.writeFileSync(path.join(deep, '.env'), 'TOKEN=late');
    reads = [];
    const p = await plan();
    expect(reads).toEqual([deep]);
    expect(shadowPaths(p)).toContain('/workspace/project/apps/web/config/.env');
  });
});
