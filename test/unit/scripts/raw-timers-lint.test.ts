/** The raw timer lint (scripts/lint/raw-timers.ts, part of `npm run lint`): host time comes from the Clock. */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findRawTimers } from '../../../scripts/lint/raw-timers.ts';
import { ROOT } from '../../helpers/processes.ts';
import { useTempDirs, writeTree } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

const tree = (files: Record<string, string>): string => writeTree(tempDir(), files);

const lint = (root: string) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint/raw-timers.ts', root], {
    cwd: ROOT,
    encoding: 'utf8',
  });

describe('the raw timer lint', () => {
  it('fails on each shape of raw timer in host/, naming the file, the line and the fix', () => {
    const root = tree({
      'host/cli/wait.ts': [
        "import { setTimeout as sleep } from 'node:timers/promises';",
        'export const a = () => setTimeout(() => {}, 10);',
        'export const b = () => setInterval(() => {}, 10);',
        'export const c = () => AbortSignal.timeout(10);',
        'export const d = () => globalThis.setTimeout(() => {}, 10);',
        'export { sleep };',
      ].join('\n'),
    });
    const run = lint(root);
    expect(run.status).toBe(1);
    for (const expected of [
      "raw timer: import from 'node:timers/promises' (host/cli/wait.ts:1)",
      'raw timer: setTimeout (host/cli/wait.ts:2)',
      'raw timer: setInterval (host/cli/wait.ts:3)',
      'raw timer: AbortSignal.timeout (host/cli/wait.ts:4)',
      'raw timer: setTimeout (host/cli/wait.ts:5)',
    ])
      expect(run.stderr).toContain(expected);
    expect(run.stderr).toMatch(/take a Clock as a dependency/);
    expect(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).toContain('scripts/lint/raw-timers.ts');
  });

  it('lets host/time/, types, own properties and code outside host/ pass', () => {
    const root = tree({
      'host/time/clock.ts': 'export const t = () => setTimeout(() => {}, 1);\n',
      'host/cli/ok.ts': [
        'let timer: ReturnType<typeof setTimeout> | undefined;',
        'const fake = { setTimeout: (fn: () => void) => fn() };',
        'fake.setTimeout(() => {});',
        'export { timer };',
      ].join('\n'),
      'scripts/tool.ts': 'setTimeout(() => {}, 1);\n',
    });
    expect(findRawTimers(root, ['host'], new Map())).toEqual([]);
  });

  it('lets a listed file pass, and flags a stale entry so the list only shrinks', () => {
    const root = tree({
      'host/cli/wait.ts': 'export const a = () => setTimeout(() => {}, 10);\n',
      'host/cli/clean.ts': 'export const b = 1;\n',
    });
    expect(findRawTimers(root, ['host'], new Map([['host/cli/wait.ts', 'why']]))).toEqual([]);
    expect(
      findRawTimers(
        root,
        ['host'],
        new Map([
          ['host/cli/wait.ts', 'why'],
          ['host/cli/clean.ts', 'why'],
        ]),
      ),
    ).toEqual([
      expect.stringContaining('RAW_TIMER_ALLOWED lists "host/cli/clean.ts", which holds no raw timer'),
    ]);
  });

  it("passes on the project's own tree", () => {
    const run = lint(ROOT);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});
