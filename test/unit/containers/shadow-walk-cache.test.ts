import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergeBlockedPatterns } from '../../../host/containers/mounts/mount-patterns.ts';
import type { PlanShadowsInput, ShadowPlan } from '../../../host/containers/mounts/mount-shadows.ts';
import { MAX_WALKED_ENTRIES, planShadows } from '../../../host/containers/mounts/mount-shadows.ts';
import type { ShadowWalkCache } from '../../../host/containers/mounts/shadow-walk-cache.ts';
import { createShadowWalkCache, RACY_WINDOW_MS } from '../../../host/containers/mounts/shadow-walk-cache.ts';

let tmp: string;
let root: string;
let deep: string;
/** Directories read by the last plans, in order. */
let reads: string[];
/** The cache's clock; tests move it instead of sleeping. */
let clock: number;

const sources = { emptyDir: '/shadow/empty-dir', emptyFile: '/shadow/empty-file' };

function write(relative: string, text = ''): void {
  const file = path.join(root, relative);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-walk-')));
  root = path.join(tmp, 'project');
  deep = path.join(root, 'apps', 'web', 'config');
  write('.env', 'TOKEN=secret');
  write('package.json', '{}');
  write('apps/web/config/settings.json', '{}');
  write('apps/web/src/url-credentials.ts', 'export {}');
  write('apps/.gitconfig', '[credential]');
  write('.git/config', '[remote "o"]');
  write('.git/objects/ab/config', 'blob');
  write('.git/modules/vendor/config', '[credential]');
  write('node_modules/ssh2/test/fixtures/id_rsa', 'key');
  write('data/carapace.db', '');
  write('docs/bad:name.env', '');
  fs.symlinkSync(path.join(root, '.env'), path.join(root, 'apps', 'link'));
  reads = [];
  // Far enough ahead that every directory just created counts as old enough to keep.
  clock = Date.now() + 10 * RACY_WINDOW_MS;
});

afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

function newCache(): ShadowWalkCache {
  return createShadowWalkCache({ now: () => clock });
}

function plan(cache?: ShadowWalkCache, overrides: Partial<PlanShadowsInput> = {}): ShadowPlan {
  return planShadows({
    hostDir: root,
    containerDir: '/workspace/project',
    patterns: mergeBlockedPatterns([]),
    hide: [{ hostPath: path.join(root, 'data'), note: 'data dir' }],
    sources,
    cache,
    readDir: (dir) => {
      reads.push(dir);
      return fs.readdirSync(dir, { withFileTypes: true });
    },
    ...overrides,
  });
}

function shadowPaths(p: ShadowPlan): string[] {
  return p.shadows.map((s) => s.containerPath);
}

/** Every directory a plan reads: all but the hidden data dir, symlinks and git objects. */
const WALKED_DIRS = 13;

describe('planShadows with a walk cache', () => {
  it('replays an unchanged tree: the same plan as without a cache, and no directory is read again', () => {
    const uncached = plan();
    expect(reads).toHaveLength(WALKED_DIRS);
    expect(shadowPaths(uncached)).toContain('/workspace/project/apps/.gitconfig');
    expect(uncached.unhideable).toEqual([path.join('docs', 'bad:name.env')]);
    expect(uncached.matchedSecrets).toBe(true);

    const cache = newCache();
    reads = [];
    expect(plan(cache)).toEqual(uncached);
    expect(reads).toHaveLength(WALKED_DIRS);
    expect(cache.size()).toBe(WALKED_DIRS);

    reads = [];
    expect(plan(cache)).toEqual(uncached);
    expect(reads).toEqual([]);
  });

  it('hides a .env created later in a deep directory that was kept, reading only that directory', () => {
    const cache = newCache();
    plan(cache);
    fs.writeFileSync(path.join(deep, '.env'), 'TOKEN=late');
    reads = [];
    const p = plan(cache);
    expect(reads).toEqual([deep]);
    expect(shadowPaths(p)).toContain('/workspace/project/apps/web/config/.env');
    expect(p).toEqual(plan());
  });

  it('reads a directory again when its mtime was set back after a .env was added (ctime cannot be)', () => {
    fs.utimesSync(deep, 1_000_000, 1_000_000);
    const before = fs.lstatSync(deep, { bigint: true });
    const cache = newCache();
    plan(cache);
    fs.writeFileSync(path.join(deep, '.env'), 'TOKEN=late');
    fs.utimesSync(deep, 1_000_000, 1_000_000);
    const after = fs.lstatSync(deep, { bigint: true });
    expect(after.mtimeNs).toBe(before.mtimeNs);
    expect(after.ctimeNs).not.toBe(before.ctimeNs);
    reads = [];
    expect(shadowPaths(plan(cache))).toContain('/workspace/project/apps/web/config/.env');
    expect(reads).toEqual([deep]);
  });

  it('does not keep a directory changed within the racy window, until its change is old enough', () => {
    clock = Date.now();
    const cache = newCache();
    plan(cache);
    expect(cache.size()).toBe(0);
    reads = [];
    plan(cache);
    expect(reads).toHaveLength(WALKED_DIRS);

    clock += RACY_WINDOW_MS + 1_000;
    plan(cache);
    expect(cache.size()).toBe(WALKED_DIRS);
    reads = [];
    plan(cache);
    expect(reads).toEqual([]);
  });

  it('forgets directories that are gone', () => {
    const cache = newCache();
    plan(cache);
    fs.rmSync(path.join(root, 'node_modules'), { recursive: true });
    reads = [];
    const p = plan(cache);
    expect(reads).toEqual([root]);
    expect(cache.size()).toBe(WALKED_DIRS - 4);
    expect(shadowPaths(p).some((s) => s.includes('node_modules'))).toBe(false);
  });

  it('reads every directory again when the patterns or the hidden paths change', () => {
    const cache = newCache();
    plan(cache);
    reads = [];
    const withSettings = plan(cache, { patterns: mergeBlockedPatterns(['settings.json']) });
    expect(reads).toHaveLength(WALKED_DIRS);
    expect(shadowPaths(withSettings)).toContain('/workspace/project/apps/web/config/settings.json');

    reads = [];
    const p = plan(cache);
    expect(reads).toHaveLength(WALKED_DIRS);
    expect(shadowPaths(p)).not.toContain('/workspace/project/apps/web/config/settings.json');

    reads = [];
    const docsHidden = plan(cache, {
      hide: [
        { hostPath: path.join(root, 'data'), note: 'data dir' },
        { hostPath: path.join(root, 'docs'), note: 'docs' },
      ],
    });
    expect(reads).toHaveLength(WALKED_DIRS - 1);
    expect(docsHidden.unhideable).toEqual([]);
    expect(cache.size()).toBe(WALKED_DIRS - 1);
  });

  it('counts the entries of replayed directories against the walk limit', () => {
    const big = path.join(root, 'big');
    const growing = path.join(root, 'growing');
    fs.mkdirSync(big);
    fs.mkdirSync(growing);
    // Stand-ins for files, so that the limit is reached without creating them on disk.
    const files = (n: number): fs.Dirent[] =>
      Array.from(
        { length: n },
        (_, i) =>
          ({
            name: `f${i}`,
            isSymbolicLink: () => false,
            isFile: () => true,
            isDirectory: () => false,
          }) as unknown as fs.Dirent,
      );
    let grown = false;
    const half = Math.ceil(MAX_WALKED_ENTRIES / 2);
    const readDir = (dir: string): fs.Dirent[] => {
      reads.push(dir);
      const real = fs.readdirSync(dir, { withFileTypes: true });
      if (dir === big) return [...real, ...files(half)];
      if (dir === growing && grown) return [...real, ...files(half)];
      return real;
    };
    const cache = newCache();
    plan(cache, { readDir });
    grown = true;
    fs.writeFileSync(path.join(growing, 'more'), '');
    reads = [];
    expect(() => plan(cache, { readDir })).toThrow(/holds more than 250000 entries/);
    expect(reads).not.toContain(big);
    expect(reads).toContain(growing);
  });
});
