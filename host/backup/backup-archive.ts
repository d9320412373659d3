import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { OUTBOX_FILES_FOLDER } from '../store/outbox-store.ts';
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
      const from = path.join(paths.dataDir, folder);
      const { files, other } = listFiles(from);
      skipped.push(...other.map((o) => `data/${folder}/${o}`));
      for (const rel of files) copyInto(path.join(from, rel), path.join(staging, 'data', folder, rel));
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

function copyInto(from: string, to: string): void {
  fs.mkdirSync(path.dirname(to), { recursive: true, mode: 0o700 });
  fs.copyFileSync(from, to);
}
