/**
 * Where the installed product's own files are: a leaf that the CLI and the composition root both read,
 * so neither imports the other for it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding package.json: the same from the sources and from the compiled `dist/`. */
function findProjectRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export const PROJECT_ROOT = findProjectRoot(path.dirname(fileURLToPath(import.meta.url)));
export const EXAMPLE_CONFIG_FILE = path.join(PROJECT_ROOT, 'config', 'config.example.toml');
