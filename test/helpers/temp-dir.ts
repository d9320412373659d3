import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';

/**
 * Creates a fresh temporary folder. The real path is returned (macOS puts tmpdir behind a symlink) so
 * tests can compare it with paths the code resolved itself.
 */
export function makeTempDir(prefix = 'carapace-'): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

export function removeTempDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}

/**
 * Registers an `afterEach` that removes every folder the returned function created during the test.
 * Call it at the top level of a test file: `const tempDir = useTempDirs();` then `tempDir()` in a test.
 */
export function useTempDirs(prefix = 'carapace-'): () => string {
  const made: string[] = [];
  afterEach(() => {
    for (const dir of made.splice(0)) removeTempDir(dir);
  });
  return () => {
    const dir = makeTempDir(prefix);
    made.push(dir);
    return dir;
  };
}

/** Writes `files` (relative path → text) under `root`, making the folders on the way; returns `root`. */
export function writeTree(root: string, files: Record<string, string>): string {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
  return root;
}
