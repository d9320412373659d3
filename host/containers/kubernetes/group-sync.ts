import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pack as tarPack, extract as tarExtract } from 'tar-stream';
import type { GuardedRoot } from '../../safe-fs/guarded-root.ts';

/** What was copied into a pod: each file's path and content hash, to tell on the way back what changed. */
export type GroupSnapshot = Map<string, string>;

export class GroupSyncError extends Error {}
/** The run left more in a folder than its quota: what came back stops there. */
export class FolderQuotaError extends GroupSyncError {}

/** How errors name the folder being copied and the setting of its quota. */
export interface FolderNames {
  name: string;
  setting: string;
}
export const GROUP_FOLDER: FolderNames = { name: 'group folder', setting: 'group_quota_mb' };
export const SESSION_FOLDER: FolderNames = { name: 'session folder', setting: 'session_quota_mb' };

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

/**
 * The group folder as a tar stream for the pod (no PVC per group: a run gets a copy), read through the
 * guarded root: regular files and folders only (a link is not followed, and not carried), at most `maxBytes`
 * in all (the group quota), refused beyond it before anything is sent.
 */
export async function packGroupFolder(
  root: GuardedRoot,
  maxBytes: number,
  folder: FolderNames = GROUP_FOLDER,
): Promise<{ tar: Readable; snapshot: GroupSnapshot; bytes: number }> {
  const files: { relPath: string; data: Buffer; mode: number }[] = [];
  const dirs: string[] = [];
  let bytes = 0;
  for await (const entry of root.walk()) {
    if (entry.stats.isDirectory()) dirs.push(entry.relPath);
    if (!entry.stats.isFile()) continue;
    bytes += entry.stats.size;
    if (bytes > maxBytes) {
      throw new GroupSyncError(
        `the ${folder.name} holds more than its quota of ${Math.round(maxBytes / 1024 / 1024)} MB ` +
          `([containers] ${folder.setting}); remove files from it first`,
      );
    }
    const file = await root.readFile(entry.relPath, { maxBytes: maxBytes - bytes + entry.stats.size });
    files.push({ relPath: entry.relPath, data: file.bytes, mode: entry.stats.mode & 0o775 });
  }
  const tar = tarPack();
  for (const dir of dirs.sort()) tar.entry({ name: `${dir}/`, type: 'directory', mode: 0o2775 });
  const snapshot: GroupSnapshot = new Map();
  for (const f of files) {
    tar.entry({ name: f.relPath, mode: f.mode | 0o660, size: f.data.length }, f.data);
    snapshot.set(f.relPath, sha256(f.data));
  }
  tar.finalize();
  // tar-stream's streamx Readable pipes like node's; typed as its own.
  return { tar: tar as unknown as Readable, snapshot, bytes };
}

/** A tar entry's name as a path inside the group folder, or undefined when it would leave it. */
function safeRelPath(name: string): string | undefined {
  const clean = path.posix.normalize(name.replace(/^\.\//, '')).replace(/\/+$/, '');
  if (clean === '' || clean === '.') return '';
  if (path.posix.isAbsolute(clean) || clean === '..' || clean.startsWith('../') || clean.includes('\0')) {
    return undefined;
  }
  return clean;
}

export interface GroupChanges {
  written: string[];
  removed: string[];
  /** Entries not taken, and why: links, devices, paths leaving the folder. */
  refused: string[];
}

/**
 * Takes the group folder back from the pod's tar stream (untrusted: it is whatever the run left), through
 * the guarded root: only files whose content differs from `before` are written (atomically, each), files of
 * `before` missing from a complete stream are removed, and nothing but regular files and folders inside the folder
 * is taken. Past `maxBytes` in all, the copy stops with an error: what was written so far stays.
 */
export async function unpackGroupChanges(
  root: GuardedRoot,
  tar: Readable,
  options: {
    before: GroupSnapshot;
    maxBytes: number;
    /** Whether the stream was the whole folder (tar exited 0): only then are missing files removed. */
    complete: () => Promise<boolean>;
    folder?: FolderNames;
  },
): Promise<GroupChanges> {
  const folder = options.folder ?? GROUP_FOLDER;
  const changes: GroupChanges = { written: [], removed: [], refused: [] };
  const seen = new Set<string>();
  let bytes = 0;
  const extract = tarExtract();
  tar.pipe(extract);
  for await (const entry of extract) {
    const { name, type, size = 0 } = entry.header;
    const rel = safeRelPath(name);
    if (rel === undefined || (type !== 'file' && type !== 'directory')) {
      changes.refused.push(`${name} (${rel === undefined ? 'outside the group folder' : type})`);
      entry.resume();
      continue;
    }
    if (type === 'directory') {
      if (rel !== '') await root.mkdirp(rel, { mode: 0o2775 });
      entry.resume();
      continue;
    }
    bytes += size;
    if (bytes > options.maxBytes) {
      entry.resume();
      tar.unpipe(extract);
      extract.destroy();
      // Whatever the pod still sends is read and dropped, not held in memory.
      tar.resume();
      throw new FolderQuotaError(
        `the run left more than the ${folder.name}'s quota of ${Math.round(options.maxBytes / 1024 / 1024)} MB ` +
          `([containers] ${folder.setting}) in it; ` +
          `${changes.written.length} changed files were taken back, the rest was not`,
      );
    }
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    const data = Buffer.concat(chunks);
    seen.add(rel);
    if (options.before.get(rel) === sha256(data)) continue;
    const dir = path.posix.dirname(rel);
    if (dir !== '.') await root.mkdirp(dir, { mode: 0o2775 });
    await root.writeFileAtomic(rel, data, { mode: 0o664 });
    changes.written.push(rel);
  }
  if (!(await options.complete())) return changes;
  for (const rel of options.before.keys()) {
    if (seen.has(rel)) continue;
    await root.remove(rel).catch(() => undefined);
    changes.removed.push(rel);
  }
  return changes;
}
