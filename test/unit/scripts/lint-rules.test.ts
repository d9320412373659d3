/**
 * The lint rules that keep the layout: no import cycles (scripts/lint/import-cycles.ts, part of `npm run
 * lint`), and the boundary between the host and container-agent (eslint.config.js).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { buildImportGraph, findCycles, listTsFiles } from '../../../scripts/lint/import-cycles.ts';
import { ROOT } from '../../helpers/processes.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

function tree(files: Record<string, string>): string {
  const root = tempDir();
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}

const cyclesIn = (root: string) =>
  findCycles(buildImportGraph(listTsFiles([path.join(root, 'host')]))).map((c) =>
    c.members.map((f) => path.relative(root, f)),
  );

describe('the import cycle lint', () => {
  it('finds a cycle through several files, type-only imports included', () => {
    const root = tree({
      'host/ipc/handlers.ts':
        "import type { Task } from '../scheduler/tasks.ts';\nexport type Identity = { id: number };\n",
      'host/scheduler/tasks.ts':
        "import { helper } from './helper.ts';\nexport type Task = { at: string };\n",
      'host/scheduler/helper.ts':
        "import type { Identity } from '../ipc/handlers.ts';\nexport const helper = 1;\n",
      'host/other.ts': "import { helper } from './scheduler/helper.ts';\nimport 'zod';\n",
    });
    expect(cyclesIn(root)).toEqual([
      ['host/ipc/handlers.ts', 'host/scheduler/helper.ts', 'host/scheduler/tasks.ts'],
    ]);
  });

  it('finds none once the shared types live in a leaf both import', () => {
    const root = tree({
      'host/types.ts': 'export type Identity = { id: number };\nexport type Task = { at: string };\n',
      'host/ipc/handlers.ts': "import type { Task } from '../types.ts';\n",
      'host/scheduler/tasks.ts': "import type { Identity } from '../types.ts';\n",
    });
    expect(cyclesIn(root)).toEqual([]);
  });

  it('fails `npm run lint` on a planted cycle, naming the files and the fix', () => {
    const root = tree({
      'host/a.ts': "import { b } from './b.ts';\nexport const a = b;\n",
      'host/b.ts': "import type { a } from './a.ts';\nexport const b = 1;\n",
    });
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint/import-cycles.ts', root], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('import cycle: host/a.ts → host/b.ts → host/a.ts');
    expect(run.stderr).toMatch(/leaf module/);
    expect(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).toContain(
      'scripts/lint/import-cycles.ts',
    );
  });
});

describe('the folder cycle lint', () => {
  const lint = (root: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint/import-cycles.ts', root], {
      cwd: ROOT,
      encoding: 'utf8',
    });

  it('fails on two host folders that load each other through different files, naming an import per arrow', () => {
    const root = tree({
      'host/store/rows.ts': "import { pid } from '../config/files.ts';\nexport const rows = pid;\n",
      'host/config/files.ts': 'export const pid = 1;\n',
      'host/config/schema.ts': "import { rows } from '../store/rows.ts';\nexport const schema = rows;\n",
    });
    expect(cyclesIn(root)).toEqual([]);
    const run = lint(root);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/folder cycle: host\/(config|store) → host\/(config|store) → host\/\1/);
    expect(run.stderr).toContain('host/store → host/config: host/store/rows.ts imports host/config/files.ts');
    expect(run.stderr).toContain(
      'host/config → host/store: host/config/schema.ts imports host/store/rows.ts',
    );
  });

  it('fails on a type-only import that points up the layers, and on a folder with no place in them', () => {
    const root = tree({
      'host/store/rows.ts': "import type { Pid } from '../config/files.ts';\nexport const rows: Pid = 1;\n",
      'host/config/files.ts': 'export type Pid = number;\n',
      'host/widgets/w.ts': 'export const w = 1;\n',
    });
    const run = lint(root);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('upward import: host/store/rows.ts → host/config/files.ts');
    expect(run.stderr).toContain('host/widgets has no place in SUBSYSTEM_LAYERS');
    expect(run.stderr).not.toMatch(/^folder cycle:/m);
  });

  it("passes on the project's own tree", () => {
    const run = lint(ROOT);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});

describe('the container-agent boundary', () => {
  const eslint = new ESLint({ cwd: ROOT });
  const errorsOf = async (filePath: string, code: string) =>
    (await eslint.lintText(code, { filePath: path.join(ROOT, filePath) }))[0]!.messages
      .filter((m) => m.ruleId === 'no-restricted-imports')
      .map((m) => m.message);

  it('lets the host import only the shared kernel of container-agent', async () => {
    const kernel = [
      "import { LIMITS } from '../../container-agent/src/protocol.ts';",
      "import { RpcError } from '../../container-agent/src/rpc/errors.ts';",
      "import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';",
      'export const used = [LIMITS, RpcError, createBashClassifier];',
    ].join('\n');
    expect(await errorsOf('host/ipc/probe.ts', kernel)).toEqual([]);
    const outside =
      "import { runAgentLoop } from '../../container-agent/src/agent-loop.ts';\nexport const x = runAgentLoop;\n";
    expect(await errorsOf('host/ipc/probe.ts', outside)).toEqual([
      expect.stringContaining('the host imports only the shared kernel of container-agent'),
    ]);
  });

  it('never lets the container import host code', async () => {
    const code = "import { startHost } from '../../host/app/host.ts';\nexport const x = startHost;\n";
    expect(await errorsOf('container-agent/src/probe.ts', code)).toEqual([
      expect.stringContaining('the container never imports host code'),
    ]);
  });
});
