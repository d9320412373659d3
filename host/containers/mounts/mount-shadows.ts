import fs from 'node:fs';
import path from 'node:path';
import { matchBlockedComponent } from './mount-patterns.ts';
import { isWithin } from './mount-paths.ts';
import type { DirOutcome, ShadowWalkCache } from './shadow-walk-cache.ts';
import type { WalkSync } from './tree-watch.ts';

// Blocked patterns are checked on the path of a mount, but a mounted directory can hold secrets of its own
// (`.env` at the top of a project, `app/.env.local` deeper down, `data/carapace.db` inside the project root
// the admin group sees). Those entries are hidden by binding an empty, read-only directory or file over them
// inside the container. The whole tree is checked at every run (symlinks are not followed: their targets are
// either outside the mount, so invisible, or inside it and walked under their own name); with a walk cache
// (shadow-walk-cache.ts), a directory whose own lstat is unchanged since an earlier walk is not read again
// but its kept outcome replayed, so an unchanged tree costs one lstat per directory. What is created after
// the walk, while the container runs, is not hidden. Git keeps remote URLs with tokens and credential
// helpers in its config, so every `.git/config` (also of submodules) and `.gitconfig` is hidden as well.

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
  /**
   * Keeps each directory's outcome between plans, replayed while the directory is unchanged (see
   * shadow-walk-cache.ts). Without it every directory is read.
   */
  cache?: ShadowWalkCache;
  /** The cache's `sync()`, taken just before this plan: an unchanged, watched tree is then not looked at. */
  synced?: WalkSync;
  /** Lists a directory; tests pass one that counts. */
  readDir?: (dir: string) => fs.Dirent[];
}

function readDirEntries(dir: string): fs.Dirent[] {
  return fs.readdirSync(dir, { withFileTypes: true });
}

/**
 * Everything besides a directory's own entries that its outcome depends on. The shadow sources and the
 * container path are applied when an outcome is replayed, so they are not part of it.
 */
function walkContext(input: PlanShadowsInput): string {
  return JSON.stringify([input.patterns, (input.hide ?? []).map((hidden) => hidden.hostPath)]);
}

/** Git files that hold remote URLs with tokens or credential helper commands. */
const GIT_CONFIG_FILE = 'config';
const GIT_DIR = '.git';
const GIT_USER_CONFIG = '.gitconfig';
/** Content-addressed objects: many files, none of them named by a person. */
const GIT_OBJECTS = 'objects';
/**
 * Folders of installed third-party packages. Their entries are hidden like any other, but do not make the
 * tree count as holding secrets: packages ship test keys (ssh2's `id_rsa`, `bad_rsa_private_key`) and
 * files such as `credentials.js`, so every project with dependencies would count, and every run that
 * reads it would be secret-tainted. The owner's own secrets are not installed by a package manager.
 */
const DEPENDENCY_DIRS = new Set(['node_modules', 'bower_components', 'site-packages', 'dist-packages']);

/**
 * Whether an entry that matched a blocked pattern is named as a secret file (`.env`, `.env.local`,
 * `credentials.json`, `id_rsa`, `.ssh`), rather than merely mentioning the word inside a longer name
 * (`url-credentials.ts`, a source file about credentials). Both are hidden; only the first makes the tree
 * count as holding secrets. Git configuration does not count either: it is hidden for the remote URLs and
 * credential helpers in it, and git writes them nowhere else in the repository.
 */
export function namesSecretFile(name: string, pattern: string): boolean {
  const lower = name.toLowerCase();
  const p = pattern.toLowerCase();
  if (/[*?[]/.test(p)) return true;
  return lower === p || (lower.startsWith(p) && /^[._-]/.test(lower.slice(p.length)));
}

/** A tree this large is refused rather than walked at every run (replayed directories count too). */
export const MAX_WALKED_ENTRIES = 250_000;

export interface ShadowPlan {
  /** Sorted so that parents come before children. */
  shadows: ShadowMount[];
  /**
   * Entries that must be hidden but whose names cannot be a mount target (":" and "," split Docker mount
   * specs; control characters are refused). The caller must not mount the directory at all.
   */
  unhideable: string[];
  /**
   * The tree holds what looks like the owner's secrets (see `namesSecretFile`), outside dependency
   * folders: its other files may hold secrets under other names, so reading it counts as reading secrets.
   */
  matchedSecrets: boolean;
}

// eslint-disable-next-line no-control-regex
const UNMOUNTABLE_NAME = /[:,\u0000-\u001f\u007f]/;

/** Shadow mounts for one mounted directory. */
export function planShadows(input: PlanShadowsInput): ShadowPlan {
  const { hostDir, containerDir, patterns, sources } = input;
  const readDir = input.readDir ?? readDirEntries;
  if (!fs.statSync(hostDir).isDirectory()) return { shadows: [], unhideable: [], matchedSecrets: false };
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

  const hiddenDirs = new Set(
    (input.hide ?? []).map((hidden) => hidden.hostPath).filter((p) => p !== hostDir && isWithin(p, hostDir)),
  );
  let walked = 0;
  const refuseTooLarge = (): never => {
    throw new Error(
      `${hostDir} holds more than ${MAX_WALKED_ENTRIES} entries; it is too large to check for secrets at every run, so it is not mounted`,
    );
  };
  // Reading a directory (readdir and matching) is kept apart from applying its outcome, so that a cache can
  // hand back the outcome of an unchanged directory without reading it.
  const read = (dir: string, insideGit: boolean, insideDeps: boolean): DirOutcome => {
    const outcome: DirOutcome = { entries: 0, matchedSecrets: false, steps: [] };
    for (const entry of readDir(dir)) {
      // Counted here as well, so that a huge directory is refused before all its entries are matched.
      if (walked + ++outcome.entries > MAX_WALKED_ENTRIES) refuseTooLarge();
      if (entry.isSymbolicLink()) continue;
      if (hiddenDirs.has(path.join(dir, entry.name))) continue;
      const pattern = matchBlockedComponent(entry.name, patterns);
      if (pattern !== undefined) {
        if (!insideDeps && namesSecretFile(entry.name, pattern)) outcome.matchedSecrets = true;
        const note = `matches blocked pattern "${pattern}"`;
        outcome.steps.push({ kind: 'hide', name: entry.name, isDir: entry.isDirectory(), note });
        continue;
      }
      if (
        entry.isFile() &&
        ((insideGit && entry.name === GIT_CONFIG_FILE) || entry.name.toLowerCase() === GIT_USER_CONFIG)
      ) {
        const note = 'git configuration (remote URLs with tokens, credential helpers)';
        outcome.steps.push({ kind: 'hide', name: entry.name, isDir: false, note });
        continue;
      }
      if (!entry.isDirectory()) continue;
      if (insideGit && entry.name === GIT_OBJECTS) continue;
      outcome.steps.push({
        kind: 'descend',
        name: entry.name,
        insideGit: insideGit || entry.name === GIT_DIR,
        insideDeps: insideDeps || DEPENDENCY_DIRS.has(entry.name),
      });
    }
    return outcome;
  };

  const cached = input.cache?.begin(hostDir, walkContext(input), input.synced);
  // A trusted tree's plan is the last one made from the same directories: replaying 2,600 of them costs
  // more (path joins, shadow merging) than the lstats the trust saves.
  const planKey = JSON.stringify([containerDir, sources]);
  const whole = cached?.trustedPlan(planKey) as ShadowPlan | undefined;
  if (whole !== undefined) return copyPlan(whole);
  let matchedSecrets = false;
  const walk = (dir: string, relative: string, insideGit: boolean, insideDeps: boolean): void => {
    const outcome =
      cached === undefined
        ? read(dir, insideGit, insideDeps)
        : cached.outcomeOf(dir, { insideGit, insideDeps }, () => read(dir, insideGit, insideDeps));
    walked += outcome.entries;
    if (walked > MAX_WALKED_ENTRIES) refuseTooLarge();
    if (outcome.matchedSecrets) matchedSecrets = true;
    for (const step of outcome.steps) {
      const childRelative = relative === '' ? step.name : path.join(relative, step.name);
      if (step.kind === 'hide') add(childRelative, step.isDir, step.note);
      else walk(path.join(dir, step.name), childRelative, step.insideGit, step.insideDeps);
    }
  };
  walk(hostDir, '', false, false);

  const shadows = [...byRelative.values()].sort((a, b) => a.containerPath.localeCompare(b.containerPath));
  const result: ShadowPlan = { shadows, unhideable, matchedSecrets };
  cached?.commit({ key: planKey, value: copyPlan(result) });
  return result;
}

/** A plan of its own for each caller: the kept one is never handed out to be changed. */
function copyPlan(plan: ShadowPlan): ShadowPlan {
  return {
    shadows: plan.shadows.map((s) => ({ ...s })),
    unhideable: [...plan.unhideable],
    matchedSecrets: plan.matchedSecrets,
  };
}
