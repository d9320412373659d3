import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import type { BackupPaths } from './backup-paths.ts';
import { acquireHostLock, HostLockedError } from '../store/host-lock.ts';
import { rotateInstallSecret } from '../store/install-secret.ts';
import { rebaseOutboxFiles } from '../store/outbox-restore.ts';
import { OUTBOX_FILES_FOLDER } from '../store/outbox-store.ts';
import { CONFIG_FILES } from './backup-archive.ts';
import { BackupVerifyError, verifyUnpacked } from './backup-manifest.ts';
import { errorMessage } from '../errors/error-message.ts';

const run = promisify(execFile);

export class RestoreRefused extends Error {}

/**
 * Restores an archive made by createBackup into a data folder. Refuses while a host runs on it (and holds
 * the host lock throughout, so none can start midway), and before touching anything verifies every
 * checksum and the database's integrity. What it replaces is moved aside, never deleted. Returns what it
 * did, line by line.
 */
export async function restoreBackup(paths: BackupPaths, file: string, now = new Date()): Promise<string[]> {
  if (!fs.existsSync(file)) throw new RestoreRefused(`there is no archive at ${file}`);
  fs.mkdirSync(paths.dataDir, { recursive: true, mode: 0o700 });
  let lock: { release(): void };
  try {
    lock = acquireHostLock(paths.dataDir);
  } catch (err) {
    if (err instanceof HostLockedError) {
      throw new RestoreRefused(
        `a Carapace host is running on ${paths.dataDir}; stop it first (carapace stop, or Ctrl+C in its console), then restore`,
      );
    }
    throw err;
  }
  // Next to the data folder, so every move below is a rename on one file system.
  const staging = fs.mkdtempSync(path.join(path.dirname(paths.dataDir), '.carapace-restore-'));
  try {
    try {
      await run('tar', ['-xzf', file, '-C', staging, '--no-same-owner']);
    } catch (err) {
      throw new RestoreRefused(`${file} is not a readable archive: ${errorMessage(err).split('\n')[0]}`);
    }
    try {
      verifyUnpacked(staging);
    } catch (err) {
      if (err instanceof BackupVerifyError) throw new RestoreRefused(err.message);
      throw err;
    }
    const db = path.join(staging, 'data', 'carapace.db');
    const check = new Database(db, { readonly: true, fileMustExist: true });
    try {
      const result = check.pragma('integrity_check', { simple: true });
      if (result !== 'ok')
        throw new RestoreRefused(`the archive's database fails its integrity check: ${String(result)}`);
    } finally {
      check.close();
    }
    return moveIntoPlace(paths, staging, now);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
    lock.release();
  }
}

function moveIntoPlace(paths: BackupPaths, staging: string, now: Date): string[] {
  const report: string[] = [];
  const aside = path.join(paths.dataDir, `before-restore-${now.toISOString().replace(/[:.]/g, '-')}`);
  const moveAside = (name: string) => {
    const current = path.join(paths.dataDir, name);
    if (!fs.existsSync(current)) return;
    fs.mkdirSync(aside, { recursive: true, mode: 0o700 });
    fs.renameSync(current, path.join(aside, name));
  };
  // The WAL and shared-memory files belong to the database they sit beside: they go with it.
  const folders = ['groups', 'sessions', OUTBOX_FILES_FOLDER];
  for (const name of ['carapace.db', 'carapace.db-wal', 'carapace.db-shm', ...folders]) moveAside(name);
  fs.renameSync(path.join(staging, 'data', 'carapace.db'), paths.databaseFile);
  for (const folder of folders) {
    const from = path.join(staging, 'data', folder);
    if (fs.existsSync(from)) fs.renameSync(from, path.join(paths.dataDir, folder));
    else fs.mkdirSync(path.join(paths.dataDir, folder), { mode: 0o700 });
  }
  report.push(`restored the database, groups and sessions into ${paths.dataDir}`);
  // The restored state hands out idempotency keys again that were used after the backup was made: a new
  // secret keeps the message ids made from them new (messaging apps drop a message whose id they saw).
  const restored = new Database(paths.databaseFile, { fileMustExist: true });
  try {
    rotateInstallSecret(restored);
    report.push(...rebaseOutboxFiles(restored, path.join(paths.dataDir, OUTBOX_FILES_FOLDER)));
  } finally {
    restored.close();
  }
  if (fs.existsSync(aside)) report.push(`what was there before is in ${aside}`);

  // Channel login state only moves forward (WhatsApp's Signal keys ratchet with every message): an older
  // copy over a live login breaks it, so a live one is always kept.
  const channels = path.join(staging, 'data', 'channels');
  for (const name of fs.existsSync(channels) ? fs.readdirSync(channels) : []) {
    const target = path.join(paths.dataDir, 'channels', name);
    if (fs.existsSync(target) && fs.readdirSync(target).length > 0) {
      report.push(
        `kept the current ${name} login: the archive's is older, and a channel's encryption state only moves forward, so restoring it over a live one would break the link`,
      );
      continue;
    }
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    fs.renameSync(path.join(channels, name), target);
    report.push(
      `restored the ${name} login; if that device was used after the backup, its encryption state has moved on and you will have to link it again`,
    );
  }

  fs.mkdirSync(paths.configDir, { recursive: true, mode: 0o700 });
  for (const name of CONFIG_FILES) {
    const from = path.join(staging, 'config', name);
    if (!fs.existsSync(from)) continue;
    const target = path.join(paths.configDir, name);
    if (!fs.existsSync(target)) {
      fs.renameSync(from, target);
      report.push(`restored ${target}`);
    } else if (fs.readFileSync(target, 'utf8') !== fs.readFileSync(from, 'utf8')) {
      fs.renameSync(from, `${target}.from-backup`);
      report.push(`kept your ${target}; the archive's copy differs and is in ${target}.from-backup`);
    }
  }
  report.push('secrets (.env) are not in archives: they stay as they are');
  return report;
}
