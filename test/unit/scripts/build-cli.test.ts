/**
 * `buildCli` (scripts/build.ts), which `npm run build` and the tests' global setup run: the new build
 * takes the old one's place whole, and the compiled CLI runs.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { buildCli } from '../../../scripts/build.ts';
import { ROOT } from '../../helpers/processes.ts';

// Inside the checkout (the git-ignored .tmp/): the build finds the project above itself, as dist/cli does.
fs.mkdirSync(path.join(ROOT, '.tmp'), { recursive: true });
const root = fs.mkdtempSync(path.join(ROOT, '.tmp', 'build-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

it('replaces an older build whole, leaves no half-built folder, and the result runs', async () => {
  const out = path.join(root, 'cli');
  fs.mkdirSync(out);
  fs.writeFileSync(path.join(out, 'stale-chunk.js'), 'throw new Error("an old build");\n');

  await buildCli(out);

  expect(fs.readdirSync(root)).toEqual(['cli']);
  expect(fs.existsSync(path.join(out, 'stale-chunk.js'))).toBe(false);
  expect(fs.readdirSync(path.join(out, 'migrations')).some((f) => f.endsWith('.sql'))).toBe(true);
  const run = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { main } = await import(${JSON.stringify(path.join(out, 'main.js'))}); process.exitCode = await main(['--help']);`,
    ],
    { encoding: 'utf8' },
  );
  expect(run.stderr).toBe('');
  expect(run.stdout).toMatch(/^Usage: carapace <command>/);
  expect(run.status).toBe(0);
}, 60_000);
