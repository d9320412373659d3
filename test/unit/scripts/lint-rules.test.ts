/**
 * The lint rules that keep the layout: no import cycles (scripts/lint/import-cycles.ts, part of `npm run
 * lint`), no function over 200 lines (scripts/lint/function-length.ts, part of it too), and the boundary
 * between the host and container-agent (eslint.config.js).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import {
  findLongFunctions,
  MAX_FUNCTION_LINES,
  TEMPORARILY_LONG_FUNCTIONS,
} from '../../../scripts/lint/function-length.ts';
import { buildImportGraph, findCycles, listTsFiles } from '../../../scripts/lint/import-cycles.ts';
import { ROOT } from '../../helpers/processes.ts';
import { useTempDirs, writeTree } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

const tree = (files: Record<string, string>): string => writeTree(tempDir(), files);

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

  it('fails on a folder cycle made of type-only imports, which the folder graph of run-time loads leaves out', () => {
    const root = tree({
      'host/router/route.ts':
        "import type { Task } from '../scheduler/task.ts';\nexport type Route = Task;\n",
      'host/scheduler/task.ts':
        "import type { Route } from '../router/route.ts';\nexport type Task = { r?: Route };\n",
    });
    const run = lint(root);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('upward import: host/router/route.ts → host/scheduler/task.ts');
    expect(run.stderr).toContain('upward import: host/scheduler/task.ts → host/router/route.ts');
  });

  it('reads the plain JavaScript of bin/: a host file importing from bin/ is a folder cycle with the entry point', () => {
    const root = tree({
      'bin/carapace.js':
        "import { check } from './node-check.js';\ncheck();\nawait import('../host/cli/main.ts');\n",
      'bin/node-check.js': 'export function check() {}\n',
      'host/cli/main.ts': "import { check } from '../../bin/node-check.js';\nexport const main = check;\n",
    });
    const run = lint(root);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('bin → host/cli: bin/carapace.js imports host/cli/main.ts');
    expect(run.stderr).toContain('host/cli → bin: host/cli/main.ts imports bin/node-check.js');
    expect(run.stderr).toContain('upward import: host/cli/main.ts → bin/node-check.js');
  });

  it("passes on the project's own tree", () => {
    const run = lint(ROOT);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  });
});

describe('the function length lint', () => {
  const lint = (root: string) =>
    spawnSync(process.execPath, ['--import', 'tsx', 'scripts/lint/function-length.ts', root], {
      cwd: ROOT,
      encoding: 'utf8',
    });
  /** A function of `n` lines of code, with blank and comment lines between that must not count. */
  const functionOf = (name: string, n: number) =>
    `export function ${name}(): number {\n  let x = 0;\n` +
    Array.from({ length: n - 4 }, (_, i) => `  // step ${i}\n\n  x += ${i};\n`).join('') +
    '  return x;\n}\n';

  it('fails on a planted function over the limit in host/ or container-agent/, naming it and the fix', () => {
    const root = tree({
      'host/app/wiring.ts': functionOf('startEverything', MAX_FUNCTION_LINES + 1),
      'container-agent/src/loop.ts': `const helper = () => 1;\n${functionOf('runLoop', MAX_FUNCTION_LINES + 5)}`,
      'host/app/fine.ts': functionOf('startSome', MAX_FUNCTION_LINES),
      'scripts/long.ts': functionOf('outsideTheRule', MAX_FUNCTION_LINES + 50),
    });
    const run = lint(root);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(
      `function too long: startEverything (host/app/wiring.ts:1) has ${MAX_FUNCTION_LINES + 1} lines of code`,
    );
    expect(run.stderr).toContain('function too long: runLoop (container-agent/src/loop.ts:2)');
    expect(run.stderr).toMatch(/split it along its jobs/);
    expect(run.stderr).not.toContain('startSome');
    expect(run.stderr).not.toContain('outsideTheRule');
    expect(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).toContain(
      'scripts/lint/function-length.ts',
    );
  });

  it('names an arrow function by the variable it is assigned to, and lets a listed one pass while the list names it', () => {
    const root = tree({
      'host/app/wiring.ts': functionOf('x', MAX_FUNCTION_LINES + 1).replace(
        'export function x(): number {',
        'export const wire = (): number => {',
      ),
    });
    expect(findLongFunctions(root, ['host'], new Set())).toEqual([
      expect.stringContaining('function too long: wire (host/app/wiring.ts:1)'),
    ]);
    expect(findLongFunctions(root, ['host'], new Set(['host/app/wiring.ts wire']))).toEqual([]);
  });

  it('flags a stale entry on the temporary list so the list only shrinks', () => {
    const root = tree({ 'host/app/short.ts': functionOf('short', 10) });
    expect(findLongFunctions(root, ['host'], new Set(['host/app/short.ts short']))).toEqual([
      expect.stringContaining(
        'TEMPORARILY_LONG_FUNCTIONS lists "host/app/short.ts short", which is no longer over',
      ),
    ]);
  });

  it("passes on the project's own tree", () => {
    const run = lint(ROOT);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    // Being split in issue 39: this shrinks to zero (see TEMPORARILY_LONG_FUNCTIONS).
    expect(TEMPORARILY_LONG_FUNCTIONS.size).toBeLessThanOrEqual(10);
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
