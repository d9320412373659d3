import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { OUTBOX_FILES_FOLDER } from '../store/outbox-store.ts';
import { isGuardedPathError } from '../safe-fs/guarded-path-error.ts';
import { openGuardedRoot } from '../safe-fs/guarded-root.ts';
import type { BackupPaths } from './backup-paths.ts';
import { listFiles, MANIFEST_FILE, sha256File, type BackupManifest } from './backup-manifest.ts';

const run = promisify(execFile);

/**
 * Folders of the data folder an archive carries besides the database (channels: login state; outbox-files:
 * the copies of files the outbox has yet to send, without which a restored pending piece could not go out).
 */
export const DATA_FOLDERS = ['groups', 'sessions', 'channels', OUTBOX_FILES_FOLDER] as const;
/** Config files an archive carries; `.env` never (secrets stay where the owner put them). */
export const CONFIG_FILES = ['config.toml', 'mount-allowlist.toml'] as const;

export interface BackupResult {
  files: number;
  /** Links and special files found in the folders, which an archive does not carry. */
  skipped: string[];
}

/**
 * Writes a consistent archive of a data folder while its host may be running: the database through
 * SQLite's online backup (one step, so one read transaction: a snapshot that includes what is still in the
 * WAL), the groups, sessions and channel folders as files, and the config without secrets, all listed with
 * their SHA-256 in a manifest. The archive appears under its name only once complete.
 */
export async function createBackup(
  paths: BackupPaths,
  file: string,
  now = new Date(),
): Promise<BackupResult> {
  if (!fs.existsSync(paths.databaseFile)) {
    throw new Error(`there is nothing to back up: no database at ${paths.databaseFile}`);
  }
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-backup-'));
  try {
    fs.mkdirSync(path.join(staging, 'data'));
    const source = new Database(paths.databaseFile, { readonly: true, fileMustExist: true });
    try {
      await source.backup(path.join(staging, 'data', 'carapace.db'), { progress: () => 0x7fffffff });
    } finally {
      source.close();
    }
    const skipped: string[] = [];
    for (const folder of DATA_FOLDERS) {
      const left = await copyFolder(path.join(paths.dataDir, folder), path.join(staging, 'data', folder));
      skipped.push(...left.map((o) => `data/${folder}/${o}`));
    }
    for (const name of CONFIG_FILES) {
      const from = path.join(paths.configDir, name);
      if (fs.existsSync(from)) copyInto(from, path.join(staging, 'config', name));
    }
    const manifest: BackupManifest = { format: 'carapace-backup/1', createdAt: now.toISOString(), files: {} };
    for (const rel of listFiles(staging).files) manifest.files[rel] = sha256File(path.join(staging, rel));
    fs.writeFileSync(path.join(staging, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);

    const partial = `${file}.partial`;
    await run('tar', ['-czf', partial, '-C', staging, '.']);
    // Chat history and group files: for the owner only.
    fs.chmodSync(partial, 0o600);
    fs.renameSync(partial, file);
    return { files: Object.keys(manifest.files).length, skipped };
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
}

/**
 * Copies the regular files of a data folder, which a running group's containers may be rearranging
 * meanwhile, through the guarded root: a file swapped for a symlink or a hard link between the listing and
 * the copy is skipped, never read where it points. Returns what it skipped (symlinks, hard links, special
 * files).
 */
async function copyFolder(from: string, to: string): Promise<string[]> {
  if (!fs.existsSync(from)) return [];
  const root = await openGuardedRoot(from);
  const skipped: string[] = [];
  for await (const { relPath, stats } of root.walk()) {
    if (stats.isDirectory()) continue;
    if (!stats.isFile()) {
      skipped.push(relPath);
      continue;
    }
    const target = path.join(to, relPath);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    try {
      await root.copyFileOut(relPath, target);
    } catch (error) {
      if (!isGuardedPathError(error)) throw error;
      if (error.problem !== 'missing') skipped.push(relPath); // a file removed meanwhile is simply gone
    }
  }
  return skipped.sort();
}

function copyInto(from: string, to: string): void {
  fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
  fs.copyFileSync(from, to);
}
