import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BackupPaths } from './backup-paths.ts';
import { holdHostLockQuietly, HostLockedError, type QuietHostLock } from '../store/host-lock.ts';
import { OUTBOX_FILES_FOLDER } from '../store/outbox-store.ts';
import { BackupVerifyError, verifyUnpacked } from './backup-manifest.ts';
import { inspectArchivedDatabase, migrateStagedDatabase } from './restore-database.ts';
import { RestoreRefused } from './restore-refused.ts';
import { REPLACED_FOLDERS, stageConfig, swapIntoPlace, type StagedConfig } from './restore-place.ts';
import { createSwap, type Rename } from './restore-swap.ts';
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

export interface RestoreDeps {
  now: Date;
  /** The migrations the host runs at start (store/migrations). */
  migrationsDir: string;
  /** How the swap renames; a test passes one that fails at a chosen call. */
  rename: Rename;
  /** Told before each step; where a test injects a failure (a disk error) to prove nothing is left half-done. */
  beforeStep: (step: RestoreStep) => void;
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
  const made: MadeOnTheWay = { dataDirs: makeDataDir(paths.dataDir), configDirs: [], configTemps: [] };
  const lock = lockDataFolder(paths.dataDir, made);
  let step: RestoreStep = 'unpack';
  const enter = (next: RestoreStep) => {
    step = next;
    beforeStep(next);
  };
  let committed = false;
  try {
    const staged = await stageRestore(paths, file, { enter, migrationsDir: deps.migrationsDir }, made);

    enter('swap');
    const aside = path.join(paths.dataDir, `before-restore-${now.toISOString().replace(/[:.]/g, '-')}`);
    const swapped = swapOrTakeBack({
      paths,
      staging: staged.dir,
      aside,
      config: staged.config,
      rename,
      made,
    });
    committed = true;
    // Done: from here nothing may throw, since nothing would be taken back; an old copy the owner can
    // still delete by hand is no reason to report a failed restore.
    for (const replaced of swapped.replacedBackups) removeQuietly(replaced);
    return [
      `restored the database, groups and sessions into ${paths.dataDir}`,
      ...(staged.toVersion > staged.fromVersion
        ? [`migrated the archive's database from schema version ${staged.fromVersion} to ${staged.toVersion}`]
        : []),
      ...staged.report,
      ...(fs.existsSync(aside) ? [`what was there before is in ${aside}`] : []),
      ...swapped.report,
      'secrets (.env) are not in archives: they stay as they are',
    ];
  } catch (err) {
    throw failed(step, err, paths);
  } finally {
    for (const temp of made.configTemps) fs.rmSync(temp, { force: true });
    if (made.staging && !made.keepStaging) fs.rmSync(made.staging, { recursive: true, force: true });
    // A restored folder holds no lock or pid file: the next host makes its own. A refused restore leaves
    // the folder's own as they were.
    lock.release({ removeFiles: committed || lock.created });
    if (!committed) {
      removeDirs(made.configDirs);
      removeDirs(made.dataDirs);
    }
  }
}

/** What a restore made before the swap, for it to remove again (all of it on failure, the scaffolding on success). */
interface MadeOnTheWay {
  dataDirs: string[];
  configDirs: string[];
  configTemps: string[];
  staging?: string;
  /** Set when a failed swap could not be taken back: the unpacked files are then the owner's to move. */
  keepStaging?: boolean;
}

function makeDataDir(dataDir: string): string[] {
  try {
    return makeDirs(dataDir);
  } catch (err) {
    throw new RestoreRefused(
      `restore could not create the data folder ${dataDir} (${oneLine(err)}); nothing was changed: fix that and restore again`,
      { cause: err },
    );
  }
}

function lockDataFolder(dataDir: string, made: MadeOnTheWay): QuietHostLock {
  try {
    return holdHostLockQuietly(dataDir);
  } catch (err) {
    removeDirs(made.dataDirs);
    if (err instanceof HostLockedError) {
      throw new RestoreRefused(
        `a Carapace host is running on ${dataDir}; stop it first (carapace stop, or Ctrl+C in its console), then restore`,
      );
    }
    throw new RestoreRefused(
      `restore could not take ${dataDir}'s host lock (${oneLine(err)}); nothing was changed: fix that and restore again`,
      { cause: err },
    );
  }
}

/**
 * Every step before the swap: it writes only into the unpacked folder and, for config files, temporary
 * names beside the owner's.
 */
async function stageRestore(
  paths: BackupPaths,
  file: string,
  deps: { enter: (step: RestoreStep) => void; migrationsDir: string | undefined },
  made: MadeOnTheWay,
) {
  const { enter } = deps;
  enter('unpack');
  const dir = fs.mkdtempSync(path.join(paths.dataDir, '.restore-'));
  made.staging = dir;
  await unpack(file, dir);

  enter('verify');
  verify(dir);
  const stagedDb = path.join(dir, 'data', 'carapace.db');
  const fromVersion = inspectArchivedDatabase(stagedDb);
  // An archive without one of these folders restores an empty one, replacing the current folder all the same.
  for (const folder of REPLACED_FOLDERS)
    fs.mkdirSync(path.join(dir, 'data', folder), { recursive: true, mode: 0o700 });

  enter('migrate');
  const migrated = migrateStagedDatabase(stagedDb, {
    migrationsDir: deps.migrationsDir,
    outboxFiles: {
      stagedDir: path.join(dir, 'data', OUTBOX_FILES_FOLDER),
      finalDir: path.join(paths.dataDir, OUTBOX_FILES_FOLDER),
    },
    beforeRepoint: () => enter('repoint'),
  });

  enter('stage-config');
  made.configDirs.push(...makeDirs(paths.configDir));
  const config = stageConfig(paths.configDir, path.join(dir, 'config'), made.configTemps);
  return { dir, fromVersion, toVersion: migrated.version, report: migrated.report, config };
}

/** The swap; on failure every rename done is taken back, or the error says what could not be. */
function swapOrTakeBack(args: {
  paths: BackupPaths;
  staging: string;
  aside: string;
  config: StagedConfig[];
  rename: Rename;
  made: MadeOnTheWay;
}): ReturnType<typeof swapIntoPlace> {
  const swap = createSwap(args.rename);
  try {
    return swapIntoPlace({ ...args, swap });
  } catch (err) {
    const stuck = swap.undo();
    if (stuck.length === 0) throw err;
    args.made.keepStaging = true;
    throw new RestoreRefused(
      `restore failed while ${DOING.swap} (${oneLine(err)}) and could not move everything back: ${stuck.join('; ')}. ` +
        `What was there before is in ${args.aside}, the unpacked archive in ${args.staging}: put them back by hand before starting the host`,
      { cause: err },
    );
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
