import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { errorMessage } from '../errors/error-message.ts';

export const MANIFEST_FILE = 'manifest.json';

/** What an archive holds: every file with its SHA-256, so a restore can prove nothing was changed or lost. */
export const backupManifest = z
  .object({
    format: z.literal('carapace-backup/1'),
    createdAt: z.string(),
    /** Relative paths with `/`, e.g. `data/carapace.db`, `data/groups/main/AGENT.md`, `config/config.toml`. */
    files: z.record(z.string().min(1).max(4096), z.string().regex(/^[0-9a-f]{64}$/)),
  })
  .strict();
export type BackupManifest = z.infer<typeof backupManifest>;

export function sha256File(file: string): string {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Every regular file under `root`, relative with `/`; what is neither a file nor a folder is reported. */
export function listFiles(root: string): { files: string[]; other: string[] } {
  const files: string[] = [];
  const other: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) files.push(child);
      else other.push(child);
    }
  };
  if (fs.existsSync(root)) walk('');
  return { files: files.sort(), other: other.sort() };
}

export class BackupVerifyError extends Error {}

/**
 * Checks an unpacked archive against its manifest: every listed file present with its checksum, nothing
 * that is not listed, nothing but regular files and folders. Throws saying what is wrong.
 */
export function verifyUnpacked(root: string): BackupManifest {
  const manifestFile = path.join(root, MANIFEST_FILE);
  if (!fs.existsSync(manifestFile)) throw new BackupVerifyError(`the archive has no ${MANIFEST_FILE}`);
  let manifest: BackupManifest;
  try {
    manifest = backupManifest.parse(JSON.parse(fs.readFileSync(manifestFile, 'utf8')));
  } catch (err) {
    throw new BackupVerifyError(`the archive's ${MANIFEST_FILE} is not valid: ${errorMessage(err)}`);
  }
  const { files, other } = listFiles(root);
  if (other.length)
    throw new BackupVerifyError(`the archive holds links or special files: ${other.join(', ')}`);
  const problems: string[] = [];
  for (const file of files) {
    if (file === MANIFEST_FILE) continue;
    const expected = manifest.files[file];
    if (expected === undefined) problems.push(`${file} is not in the manifest`);
    else if (sha256File(path.join(root, file)) !== expected)
      problems.push(`${file} does not match its checksum`);
  }
  for (const file of Object.keys(manifest.files)) {
    if (!files.includes(file)) problems.push(`${file} is missing`);
  }
  if (problems.length) {
    throw new BackupVerifyError(
      `the archive was changed or damaged, nothing was restored: ${problems.slice(0, 10).join('; ')}${problems.length > 10 ? ` (and ${problems.length - 10} more)` : ''}`,
    );
  }
  return manifest;
}
