import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nodeVersionProblem } from '../../../host/cli/node-support.js';
import { checkNode } from '../../../host/cli/commands/doctor-command.ts';
import type { CliContext } from '../../../host/cli/cli-context.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const PACKAGE_FILE = path.join(ROOT, 'package.json');
const tempDir = useTempDirs();

describe('the Node versions Carapace runs on', () => {
  it('asks for Node 22.14 or newer, the first Node-API 10 release better-sqlite3 13 needs', () => {
    const pkg = JSON.parse(fs.readFileSync(PACKAGE_FILE, 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe('>=22.14');
  });

  it('accepts 22.14 and every later 22, 24 and newer major', () => {
    for (const version of ['22.14.0', '22.23.3', '23.0.0', '24.0.0', '24.21.0', '26.12.1']) {
      expect(nodeVersionProblem(PACKAGE_FILE, version), version).toBeUndefined();
    }
  });

  it('names the minimum, the running version and how to get a newer Node for older ones', () => {
    for (const version of ['20.20.2', '22.13.1', '18.0.0']) {
      const problem = nodeVersionProblem(PACKAGE_FILE, version);
      expect(problem).toContain('needs Node 22.14 or newer');
      expect(problem).toContain(`this is Node ${version}`);
      expect(problem).toContain('nvm install 24');
    }
  });

  it('refuses a package file whose engines.node it cannot read instead of letting any Node through', () => {
    const file = path.join(tempDir(), 'package.json');
    fs.writeFileSync(file, JSON.stringify({ engines: { node: '^22.14 || >=24' } }));
    expect(() => nodeVersionProblem(file, '24.0.0')).toThrow(/expected ">=MAJOR.MINOR"/);
  });

  it("doctor's node check passes on the Node running the tests", async () => {
    const result = await checkNode({} as CliContext);
    expect(result).toMatchObject({ name: 'node', ok: true, detail: `Node ${process.versions.node}` });
  });

  it('the CLI stops with the message and exit 1 before loading anything when the Node is too old', () => {
    // A package file asking for a Node newer than any makes the running Node "too old" without a second Node.
    const dir = tempDir();
    for (const file of ['bin/carapace.js', 'host/cli/node-support.js']) {
      fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
    }
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ type: 'module', engines: { node: '>=999.0' } }),
    );
    const run = spawnSync(process.execPath, [path.join(dir, 'bin', 'carapace.js'), 'status'], {
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      `Carapace needs Node 999.0 or newer (Node 22 or 24 LTS); this is Node ${process.versions.node}`,
    );
    expect(run.stdout).toBe('');
  });
});
