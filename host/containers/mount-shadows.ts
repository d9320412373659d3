import fs from 'node:fs';
import path from 'node:path';
import { matchBlockedComponent } from './mount-patterns.ts';
import { isWithin } from './mount-paths.ts';

// Blocked patterns are checked on the path of a mount, but a mounted directory can hold secrets of its own
// (`.env` at the top of a project, `data/carapace.db` inside the project root the admin group sees). Those
// entries are hidden by binding an empty, read-only directory or file over them inside the container.
// Limits: only the top level of a mounted directory is scanned for blocked names (a recursive walk of a
// large tree at every run would be slow and still race with new files), plus the explicit `hide` paths.

export interface ShadowSources {
  emptyDir: string;
  emptyFile: string;
}

export interface ShadowMount {
  hostPath: string;
  containerPath: string;
  readOnly: true;
  note: string;
}

export interface HiddenPath {
  /** Resolved host path to hide when it lies inside the mounted directory. */
  hostPath: string;
  note: string;
}

const SHADOW_DIR = 'mount-shadow';

/**
 * Creates (once) the empty directory and empty file bound over hidden entries, under the data dir which no
 * container can write. Throws if either is no longer empty or has been replaced by a symlink: binding a
 * non-empty "shadow" would expose whatever was put there.
 */
export function ensureShadowSources(realDataDir: string): ShadowSources {
  const dir = path.join(realDataDir, SHADOW_DIR);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const emptyDir = path.join(dir, 'empty-dir');
  const emptyFile = path.join(dir, 'empty-file');
  if (!fs.existsSync(emptyDir)) fs.mkdirSync(emptyDir, { mode: 0o555 });
  try {
    fs.writeFileSync(emptyFile, '', { flag: 'wx', mode: 0o444 });
  } catch (err) {
    if (!(typeof err === 'object' && err !== null && 'code' in err && err.code === 'EEXIST')) throw err;
  }
  const dirStat = fs.lstatSync(emptyDir);
  if (!dirStat.isDirectory() || fs.readdirSync(emptyDir).length > 0) {
    throw new Error(
      `${emptyDir} must be an empty directory (it hides secrets inside mounts); remove it and retry`,
    );
  }
  const fileStat = fs.lstatSync(emptyFile);
  if (!fileStat.isFile() || fileStat.size !== 0) {
    throw new Error(
      `${emptyFile} must be an empty regular file (it hides secrets inside mounts); remove it and retry`,
    );
  }
  return { emptyDir, emptyFile };
}

export interface PlanShadowsInput {
  /** Resolved host directory of the mount. */
  hostDir: string;
  containerDir: string;
  patterns: readonly string[];
  hide?: readonly HiddenPath[];
  sources: ShadowSources;
}

export interface ShadowPlan {
  /** Sorted so that parents come before children. */
  shadows: ShadowMount[];
  /**
   * Entries that must be hidden but whose names cannot be a mount target (":" and "," split Docker mount
   * specs; control characters are refused). The caller must not mount the directory at all.
   */
  unhideable: string[];
}

// eslint-disable-next-line no-control-regex
const UNMOUNTABLE_NAME = /[:,\u0000-\u001f\u007f]/;

/** Shadow mounts for one mounted directory. */
export function planShadows(input: PlanShadowsInput): ShadowPlan {
  const { hostDir, containerDir, patterns, sources } = input;
  if (!fs.statSync(hostDir).isDirectory()) return { shadows: [], unhideable: [] };
  const byRelative = new Map<string, ShadowMount>();
  const unhideable: string[] = [];
  const add = (relative: string, isDir: boolean, note: string): void => {
    if (UNMOUNTABLE_NAME.test(relative)) {
      unhideable.push(relative);
      return;
    }
    for (const existing of [...byRelative.keys()]) {
      if (isWithin(relative, existing)) return;
      // A hidden parent already hides this child; a second bind inside it would only add noise.
      if (isWithin(existing, relative)) byRelative.delete(existing);
    }
    byRelative.set(relative, {
      hostPath: isDir ? sources.emptyDir : sources.emptyFile,
      containerPath: `${containerDir}/${relative.split(path.sep).join('/')}`,
      readOnly: true,
      note,
    });
  };

  for (const hidden of input.hide ?? []) {
    if (hidden.hostPath === hostDir || !isWithin(hidden.hostPath, hostDir)) continue;
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(hidden.hostPath);
    } catch {
      continue;
    }
    add(path.relative(hostDir, hidden.hostPath), stat.isDirectory(), hidden.note);
  }

  for (const entry of fs.readdirSync(hostDir, { withFileTypes: true })) {
    // A symlink's target is either outside the mount (not visible in the container) or inside it (and then
    // visible under its own name, which this scan sees if it is at the top level).
    if (entry.isSymbolicLink()) continue;
    const pattern = matchBlockedComponent(entry.name, patterns);
    if (pattern !== undefined) add(entry.name, entry.isDirectory(), `matches blocked pattern "${pattern}"`);
  }

  const shadows = [...byRelative.values()].sort((a, b) => a.containerPath.localeCompare(b.containerPath));
  return { shadows, unhideable };
}
