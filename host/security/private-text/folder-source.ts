import type { Stats } from 'node:fs';
import path from 'node:path';
import { errorCode } from '../../errors/error-code.ts';
import { openGuardedRoot } from '../../safe-fs/guarded-root.ts';
import type { PrivateIndex, PrivateScope } from './private-index.ts';

/**
 * Keeps a private index in step with a folder, reading only what changed since the last refresh: a file is
 * read again when its size, modification or change time or inode differ (a command can set mtime back, not
 * ctime), and a file gone is dropped. Read through the guarded root, because the folder is a container's
 * to write: a symlink planted in it is never followed out of it.
 */
export interface FolderSourceOptions {
  /** The folder; a missing folder holds nothing. */
  root: string;
  scope: PrivateScope;
  /** How the owner's question names the folder ("the group folder"). */
  label: string;
  /** Folders whose files are not private here (a group's `media`: what its chat posted). */
  skipFolder?(relPath: string): boolean;
  maxFileBytes?: number;
  maxTotalBytes?: number;
  maxEntries?: number;
}

export interface FolderRefresh {
  /** Files read again because they changed (or are new). */
  read: number;
  /** Files indexed after the refresh. */
  files: number;
  /** Files left out: past a budget (their text is not checked), named for the audit. */
  leftOut: string[];
}

const DEFAULTS = { maxFileBytes: 1024 * 1024, maxTotalBytes: 16 * 1024 * 1024, maxEntries: 20_000 };
/** Files that hold a NUL in their head are binary: their text is not a person's words. */
const BINARY_HEAD = 8000;

const identityOf = (s: Stats) => `${s.size}:${s.mtimeMs}:${s.ctimeMs}:${s.ino}`;

export function createFolderSource(index: PrivateIndex, options: FolderSourceOptions) {
  const limits = { ...DEFAULTS, ...options };
  const prefix = `${options.root}\u0000`;
  // relPath → the identity its indexed text was read at (binary files too, so they are not read again).
  const known = new Map<string, string>();

  return {
    async refresh(): Promise<FolderRefresh> {
      const result: FolderRefresh = { read: 0, files: 0, leftOut: [] };
      const present = new Set<string>();
      let total = 0;
      let entries = 0;
      let root;
      try {
        root = await openGuardedRoot(options.root, { label: options.label });
      } catch (error) {
        // No folder holds nothing private; a folder that cannot be read is an error, which the rule
        // asks the owner about in a corrupted run, never an empty index.
        if (errorCode(error) !== 'ENOENT') throw error;
        root = undefined;
      }
      if (root) {
        const guarded = root;
        // A git work tree inside the folder (a clone) holds what came from a remote and goes back to it:
        // its files are not the group's words, and a push of them would match itself. The group's own
        // files copied into it still match where they came from.
        const descend = (rel: string) =>
          !(options.skipFolder?.(rel) ?? false) &&
          path.basename(rel) !== '.git' &&
          guarded.statSync(`${rel}/.git`) === null;
        for await (const entry of root.walk({ descend })) {
          if (++entries > limits.maxEntries) {
            result.leftOut.push(`entries past ${limits.maxEntries}`);
            break;
          }
          if (!entry.stats.isFile()) continue;
          const rel = entry.relPath;
          if (entry.stats.size > limits.maxFileBytes || total + entry.stats.size > limits.maxTotalBytes) {
            result.leftOut.push(rel);
            continue;
          }
          total += entry.stats.size;
          present.add(rel);
          const identity = identityOf(entry.stats);
          if (known.get(rel) === identity) continue;
          let bytes: Buffer;
          try {
            ({ bytes } = await root.readFile(rel, { maxBytes: limits.maxFileBytes }));
          } catch {
            // Swapped or removed since it was listed: what the folder holds now is read next time.
            present.delete(rel);
            continue;
          }
          result.read++;
          known.set(rel, identity);
          if (bytes.subarray(0, BINARY_HEAD).includes(0)) index.delete(prefix + rel);
          else
            index.set(prefix + rel, {
              scope: options.scope,
              label: `${rel} in ${options.label}`,
              text: bytes.toString('utf8'),
            });
        }
      }
      for (const rel of [...known.keys()]) {
        if (present.has(rel)) continue;
        known.delete(rel);
        index.delete(prefix + rel);
      }
      result.files = present.size;
      return result;
    },
  };
}
