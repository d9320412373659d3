import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BackupPaths } from './backup-paths.ts';
import { holdHostLockQuietly, HostLockedError, type QuietHostLock } from '../store/host-lock.ts';
import { OUTBOX_FILES_FOLDER } from '../store/outbox-store.ts';
import { CONFIG_FILES } from './backup-archive.ts';
import { BackupVerifyError, verifyUnpacked } from './backup-manifest.ts';
import { inspectArchivedDatabase, migrateStagedDatabase } from './restore-database.ts';
import { RestoreRefused } from './restore-refused.ts';
import { createSwap, type Rename, type Swap } from './restore-swap.ts';
import { errorMessage } from '../errors/error-message.ts';

const run = promisify(execFile);

/** A restore's steps in order. Until `swap` they work on the unpacked copy only. */
export const RESTORE_STEPS = ['unpack', 'verify', 'migrate', 'repoint', 'stage-config', 'swap'] as const;
export type RestoreStep = (typeof RESTORE_STEPS)[number];

const DOING: Record<RestoreStep, string> = {
  unpack: 'unpacking the archive',
  verify: 'checking the archive',
  migrate: "migrating the archive's database",
  repoint: "preparing the archive's database",
  'stage-config': 'copying the config files beside yours',
  swap: 'putting the restored files in place',
};

/** The database and the WAL and shared-memory files that belong to it: they move together. */
const DATABASE_FILES = ['carapace.db', 'carapace.db-wal', 'carapace.db-shm'] as const;
/** Folders the archive's copy replaces whole. */
const REPLACED_FOLDERS = ['groups', 'sessions', OUTBOX_FILES_FOLDER] as const;

export interface RestoreDeps {
  now: Date;
  /** The migrations the host runs at start (store/migrations). */
  migrationsDir: string;
  /** How the swap renames; a test passes one that fails at a chosen call. */
  rename: Rename;
  /** Told before each step; where a test injects a failure (a disk error) to prove nothing is left half-done. */
  beforeStep: (step: RestoreStep) => void;
}

interface StagedConfig {
  /** A copy of the archive's file in the config folder itself, so putting it in place is a rename. */
  temp: string;
  target: string;
}

/**
 * Restores an archive made by createBackup (by this version or an earlier one) into a data folder, all or
 * nothing. It unpacks into a folder inside the data folder (so every move is a rename on one file system),
 * verifies every checksum and the database's integrity, migrates the unpacked database with the host's own
 * start-up code and prepares it, copies the config files beside the owner's, and only then swaps: the
 * current files are renamed aside into `before-restore-…` and the restored ones renamed in. A failure before
 * the swap leaves the folders as they were; one during it takes back every rename already done. Refuses
 * while a host runs on the folder, and holds its lock throughout. Returns what it did, line by line.
 */
export async function restoreBackup(
  paths: BackupPaths,
  file: string,
  deps: Partial<RestoreDeps> = {},
): Promise<string[]> {
  const { now = new Date(), rename = fs.renameSync, beforeStep = () => undefined } = deps;
  if (!fs.existsSync(file)) throw new RestoreRefused(`there is no archive at ${file}`);
  const madeDataDirs = makeDirs(paths.dataDir);
  let lock: QuietHostLock;
  try {
    lock = holdHostLockQuietly(paths.dataDir);
  } catch (err) {
    removeDirs(madeDataDirs);
    if (err instanceof HostLockedError) {
      throw new RestoreRefused(
        `a Carapace host is running on ${paths.dataDir}; stop it first (carapace stop, or Ctrl+C in its console), then restore`,
      );
    }
    throw new RestoreRefused(
      `restore could not take ${paths.dataDir}'s host lock (${oneLine(err)}); nothing was changed: fix that and restore again`,
      { cause: err },
    );
  }

  let step: RestoreStep = 'unpack';
  const enter = (next: RestoreStep) => {
    step = next;
    beforeStep(next);
  };
  let staging: string | undefined;
  let keepStaging = false;
  let committed = false;
  const madeConfigDirs: string[] = [];
  const configTemps: string[] = [];
  try {
    enter('unpack');
    staging = fs.mkdtempSync(path.join(paths.dataDir, '.restore-'));
    await unpack(file, staging);

    enter('verify');
    verify(staging);
    const stagedDb = path.join(staging, 'data', 'carapace.db');
    const fromVersion = inspectArchivedDatabase(stagedDb);
    for (const folder of REPLACED_FOLDERS)
      fs.mkdirSync(path.join(staging, 'data', folder), { recursive: true, mode: 0o700 });

    enter('migrate');
    const migrated = migrateStagedDatabase(stagedDb, {
      migrationsDir: deps.migrationsDir,
      outboxFiles: {
        stagedDir: path.join(staging, 'data', OUTBOX_FILES_FOLDER),
        finalDir: path.join(paths.dataDir, OUTBOX_FILES_FOLDER),
      },
      beforeRepoint: () => enter('repoint'),
    });

    enter('stage-config');
    madeConfigDirs.push(...makeDirs(paths.configDir));
    const config = stageConfig(paths.configDir, path.join(staging, 'config'), configTemps);

    enter('swap');
    const aside = path.join(paths.dataDir, `before-restore-${now.toISOString().replace(/[:.]/g, '-')}`);
    const swap = createSwap(rename);
    let swapped: ReturnType<typeof swapIntoPlace>;
    try {
      swapped = swapIntoPlace({ paths, staging, aside, config, swap });
    } catch (err) {
      const stuck = swap.undo();
      if (stuck.length === 0) throw err;
      keepStaging = true;
      throw new RestoreRefused(
        `restore failed while ${DOING.swap} (${oneLine(err)}) and could not move everything back: ${stuck.join('; ')}. ` +
          `What was there before is in ${aside}, the unpacked archive in ${staging}: put them back by hand before starting the host`,
        { cause: err },
      );
    }
    committed = true;
    // Done: from here nothing may throw, since nothing would be taken back; an old copy the owner can
    // still delete by hand is no reason to report a failed restore.
    for (const replaced of swapped.replacedBackups) removeQuietly(replaced);

    return [
      `restored the database, groups and sessions into ${paths.dataDir}`,
      ...(migrated.version > fromVersion
        ? [`migrated the archive's database from schema version ${fromVersion} to ${migrated.version}`]
        : []),
      ...migrated.report,
      ...(fs.existsSync(aside) ? [`what was there before is in ${aside}`] : []),
      ...swapped.report,
      'secrets (.env) are not in archives: they stay as they are',
    ];
  } catch (err) {
    throw failed(step, err, paths);
  } finally {
    for (const temp of configTemps) fs.rmSync(temp, { force: true });
    if (staging && !keepStaging) fs.rmSync(staging, { recursive: true, force: true });
    // A restored folder holds no lock or pid file: the next host makes its own. A refused restore leaves
    // the folder's own as they were.
    lock.release({ removeFiles: committed || lock.created });
    if (!committed) {
      removeDirs(madeConfigDirs);
      removeDirs(madeDataDirs);
    }
  }
}

async function unpack(file: string, staging: string): Promise<void> {
  try {
    await run('tar', ['-xzf', file, '-C', staging, '--no-same-owner']);
  } catch (err) {
    throw new RestoreRefused(
      `${file} is not a readable archive (${oneLine(err)}); nothing was restored: use another archive`,
    );
  }
}

function verify(staging: string): void {
  try {
    verifyUnpacked(staging);
  } catch (err) {
    if (!(err instanceof BackupVerifyError)) throw err;
    throw new RestoreRefused(
      err.message.includes('nothing was restored') ? err.message : `${err.message}; nothing was restored`,
    );
  }
  if (!fs.existsSync(path.join(staging, 'data', 'carapace.db'))) {
    throw new RestoreRefused(
      'the archive holds no database (data/carapace.db); nothing was restored: use another archive',
    );
  }
}

/**
 * The archive's config files, copied into the config folder under temporary names (it may be on another
 * file system than the data folder), for those that differ from the owner's or are missing.
 */
function stageConfig(configDir: string, stagedConfig: string, temps: string[]): StagedConfig[] {
  const staged: StagedConfig[] = [];
  for (const name of CONFIG_FILES) {
    const from = path.join(stagedConfig, name);
    if (!fs.existsSync(from)) continue;
    const target = path.join(configDir, name);
    if (fs.existsSync(target) && fs.readFileSync(target).equals(fs.readFileSync(from))) continue;
    const temp = path.join(configDir, `.${name}.restore-${crypto.randomBytes(6).toString('hex')}`);
    temps.push(temp);
    fs.copyFileSync(from, temp);
    staged.push({ temp, target });
  }
  return staged;
}

/** Every rename of the restore, through `swap` so that a failure can take them back. */
function swapIntoPlace(args: {
  paths: BackupPaths;
  staging: string;
  aside: string;
  config: StagedConfig[];
  swap: Swap;
}): { report: string[]; replacedBackups: string[] } {
  const { paths, staging, aside, config, swap } = args;
  const current = (rel: string) => path.join(paths.dataDir, rel);
  const staged = (rel: string) => path.join(staging, 'data', rel);
  const moveAside = (rel: string) => {
    if (!exists(current(rel))) return;
    swap.mkdir(path.dirname(path.join(aside, rel)));
    swap.move(current(rel), path.join(aside, rel));
  };
  const report: string[] = [];
  for (const name of DATABASE_FILES) moveAside(name);
  for (const name of DATABASE_FILES) if (exists(staged(name))) swap.move(staged(name), current(name));
  for (const folder of REPLACED_FOLDERS) {
    moveAside(folder);
    swap.move(staged(folder), current(folder));
  }

  // Channel login state only moves forward (WhatsApp's Signal keys ratchet with every message): an older
  // copy over a live login breaks it, so a live one is always kept.
  const channels = staged('channels');
  for (const name of fs.existsSync(channels) ? fs.readdirSync(channels) : []) {
    const rel = path.join('channels', name);
    if (holdsSomething(current(rel))) {
      report.push(
        `kept the current ${name} login: the archive's is older, and a channel's encryption state only moves forward, so restoring it over a live one would break the link`,
      );
      continue;
    }
    moveAside(rel);
    swap.mkdir(current('channels'));
    swap.move(staged(rel), current(rel));
    report.push(
      `restored the ${name} login; if that device was used after the backup, its encryption state has moved on and you will have to link it again`,
    );
  }

  // The owner's config files are never replaced: a missing one is restored, a different one kept with the
  // archive's copy beside it (replacing the copy an earlier restore left there).
  const replacedBackups: string[] = [];
  for (const { temp, target } of config) {
    if (!exists(target)) {
      swap.move(temp, target);
      report.push(`restored ${target}`);
      continue;
    }
    const beside = `${target}.from-backup`;
    if (exists(beside)) {
      swap.move(beside, `${temp}.replaced`);
      replacedBackups.push(`${temp}.replaced`);
    }
    swap.move(temp, beside);
    report.push(`kept your ${target}; the archive's copy differs and is in ${beside}`);
  }
  return { report, replacedBackups };
}

function failed(step: RestoreStep, err: unknown, paths: BackupPaths): RestoreRefused {
  if (err instanceof RestoreRefused) return err;
  return new RestoreRefused(
    `restore failed while ${DOING[step]} (${oneLine(err)}); nothing was changed, ${paths.dataDir} is as it was: fix that and restore again`,
    { cause: err },
  );
}

function removeQuietly(file: string): void {
  try {
    fs.rmSync(file, { force: true });
  } catch {
    // Left behind: harmless, see above.
  }
}

function oneLine(err: unknown): string {
  return errorMessage(err).split('\n')[0] ?? '';
}

function exists(p: string): boolean {
  return fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;
}

/** A live login: a folder with files in it (or, oddly, something else under that name: left alone too). */
function holdsSomething(p: string): boolean {
  const stat = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!stat) return false;
  return !stat.isDirectory() || fs.readdirSync(p).length > 0;
}

/** Creates `dir` and its missing parents (owner-only); returns those it created, outermost first. */
function makeDirs(dir: string): string[] {
  const first = fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first === undefined) return [];
  const made: string[] = [];
  for (let d = dir; ; d = path.dirname(d)) {
    made.unshift(d);
    if (d === first || d === path.dirname(d)) return made;
  }
}

/** Removes folders makeDirs created, innermost first, as long as they are empty. */
function removeDirs(made: string[]): void {
  for (const dir of [...made].reverse()) {
    try {
      fs.rmdirSync(dir);
    } catch {
      return;
    }
  }
}
