import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/**
 * Files whose job is a folder a container writes (a group's attachments and media, the disk-quota walk):
 * they touch it only through host/safe-fs/, which opens once and checks the descriptor, never by name
 * with node:fs. A type-only import loads nothing and is allowed.
 */
const GUARDED_FILES = ['host/router/media/', 'host/containers/mounts/disk-quota'];

/** The module itself, the one place raw file access on those folders is written. */
const ALLOWED = ['host/safe-fs/'];

/** Value imports (static, re-export, dynamic or require) of node's file system modules in `source`. */
function rawFsImports(source: string): string[] {
  const found: string[] = [];
  const patterns = [
    /^\s*(import|export)\s+(?!type\b)[^;]*?from\s+['"](node:)?fs(\/promises)?['"]/gm,
    /\b(import|require)\s*\(\s*['"](node:)?fs(\/promises)?['"]\s*\)/g,
  ];
  for (const pattern of patterns) for (const m of source.matchAll(pattern)) found.push(m[0].trim());
  return found;
}

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)).split(path.sep).join('/'));
}

describe('the file-system boundary of container-writable folders', () => {
  it('finds raw fs imports of every spelling, and lets a type-only import through', () => {
    expect(rawFsImports("import fs from 'node:fs';")).toHaveLength(1);
    expect(rawFsImports("import { readFile } from 'fs/promises';")).toHaveLength(1);
    expect(rawFsImports("import fs, {\n  constants,\n} from 'node:fs';")).toHaveLength(1);
    expect(rawFsImports("export { readFile } from 'node:fs/promises';")).toHaveLength(1);
    expect(rawFsImports("const fs = await import('node:fs');")).toHaveLength(1);
    expect(rawFsImports("const fs = require('fs');")).toHaveLength(1);
    expect(rawFsImports("import type { FSWatcher } from 'node:fs';")).toEqual([]);
    expect(rawFsImports("import path from 'node:path';")).toEqual([]);
  });

  it('has no raw fs import in the files that handle a container-writable folder, outside host/safe-fs', () => {
    const files = sourceFiles('host').filter(
      (f) => GUARDED_FILES.some((g) => f.startsWith(g)) && !ALLOWED.some((a) => f.startsWith(a)),
    );
    expect(files.length).toBeGreaterThan(5);
    const offending = files
      .map((f) => ({ file: f, imports: rawFsImports(fs.readFileSync(path.join(ROOT, f), 'utf8')) }))
      .filter((f) => f.imports.length > 0);
    // Use host/safe-fs/guarded-root.ts (openGuardedRoot): it opens without following and checks the
    // descriptor; a name checked and then used again can be another file by then.
    expect(offending).toEqual([]);
  });
});
