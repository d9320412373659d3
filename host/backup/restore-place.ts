import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { BackupPaths } from './backup-paths.ts';
import { OUTBOX_FILES_FOLDER } from '../store/outbox-store.ts';
import { CONFIG_FILES } from './backup-archive.ts';
import type { Swap } from './restore-swap.ts';

// What a restore puts where: which of the data folder's files the archive's copy replaces, which it never
// does (a live channel login, the owner's config), and the renames that do it (restore-archive.ts runs them).

/** The database and the WAL and shared-memory files that belong to it: they move together. */
export const DATABASE_FILES = ['carapace.db', 'carapace.db-wal', 'carapace.db-shm'] as const;
/** Folders the archive's copy replaces whole. */
export const REPLACED_FOLDERS = ['groups', 'sessions', OUTBOX_FILES_FOLDER] as const;

export interface StagedConfig {
  /** A copy of the archive's file in the config folder itself, so putting it in place is a rename. */
  temp: string;
  target: string;
}

/**
 * The archive's config files, copied into the config folder under temporary names (it may be on another
 * file system than the data folder), for those that differ from the owner's or are missing.
 */
export function stageConfig(configDir: string, stagedConfig: string, temps: string[]): StagedConfig[] {
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
export function swapIntoPlace(args: {
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

function exists(p: string): boolean {
  return fs.lstatSync(p, { throwIfNoEntry: false }) !== undefined;
}

/** A live login: a folder with files in it (or, oddly, something else under that name: left alone too). */
function holdsSomething(p: string): boolean {
  const stat = fs.lstatSync(p, { throwIfNoEntry: false });
  if (!stat) return false;
  return !stat.isDirectory() || fs.readdirSync(p).length > 0;
}
