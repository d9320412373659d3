import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../errors/error-message.ts';
import { errorCode } from '../errors/error-code.ts';

/**
 * config.toml on disk: read with the hash of its bytes, written atomically only over the version the
 * change was based on, and every replaced version kept in a ring of backups (`config.history/`, newest N,
 * 0600) with an index of when each was replaced and by what.
 */

export interface ConfigFileVersion {
  /** '' when the file does not exist. */
  text: string;
  /** sha256 of the bytes read (of '' when absent). */
  hash: string;
}

export interface ConfigBackup {
  /** The backup's file name inside the history folder. */
  file: string;
  /** When this version was replaced (ISO). */
  replacedAt: string;
  hash: string;
  replacedBy: string;
}

export class StaleConfigError extends Error {
  constructor(file: string) {
    super(`${file} changed since it was read; read it again and redo the change`);
    this.name = 'StaleConfigError';
  }
}

export interface ConfigFileStoreOptions {
  configFile: string;
  /** Backups kept; the oldest beyond this are deleted. */
  keep?: number;
  now?: () => Date;
}

export const hashText = (bytes: string | Buffer): string => createHash('sha256').update(bytes).digest('hex');

const INDEX_FILE = 'index.json';

function fsyncPath(p: string): void {
  const fd = fs.openSync(p, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes `text` to `file` so a reader sees the old or the new bytes, never a mix, even across a crash. */
export function writeFileAtomically(file: string, text: string, mode = 0o600): void {
  const dir = path.dirname(file);
  const temp = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  const fd = fs.openSync(temp, 'wx', mode);
  try {
    fs.writeFileSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(temp, file);
  } catch (err) {
    fs.rmSync(temp, { force: true });
    throw err;
  }
  fsyncPath(dir);
}

export function createConfigFileStore({
  configFile,
  keep = 20,
  now = () => new Date(),
}: ConfigFileStoreOptions) {
  const historyDir = path.join(path.dirname(configFile), 'config.history');
  const indexFile = path.join(historyDir, INDEX_FILE);

  function read(): ConfigFileVersion {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(configFile);
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return { text: '', hash: hashText('') };
      throw err;
    }
    return { text: bytes.toString('utf8'), hash: hashText(bytes) };
  }

  /** Backups, newest first. */
  function history(): ConfigBackup[] {
    try {
      return JSON.parse(fs.readFileSync(indexFile, 'utf8')) as ConfigBackup[];
    } catch (err) {
      if (errorCode(err) === 'ENOENT') return [];
      throw new Error(
        `${indexFile} is unreadable (${errorMessage(err)}); move it away to start a new history`,
      );
    }
  }

  function backupText(backup: ConfigBackup): string {
    return fs.readFileSync(path.join(historyDir, path.basename(backup.file)), 'utf8');
  }

  /**
   * Replaces the file with `text` if it still has `baseHash`; the replaced version goes to the ring.
   * Returns the new hash.
   */
  function write(text: string, baseHash: string): string {
    const current = read();
    if (current.hash !== baseHash) throw new StaleConfigError(configFile);
    const newHash = hashText(text);
    if (newHash === current.hash) return newHash;
    let entries = history();
    if (fs.existsSync(configFile)) {
      fs.mkdirSync(historyDir, { recursive: true, mode: 0o700 });
      const at = now();
      const file = `${at.toISOString().replace(/[:.]/g, '-')}-${current.hash.slice(0, 12)}.toml`;
      writeFileAtomically(path.join(historyDir, file), current.text);
      entries = [{ file, replacedAt: at.toISOString(), hash: current.hash, replacedBy: newHash }, ...entries];
      for (const old of entries.slice(keep))
        fs.rmSync(path.join(historyDir, path.basename(old.file)), { force: true });
      entries = entries.slice(0, keep);
      writeFileAtomically(indexFile, `${JSON.stringify(entries, null, 2)}\n`);
    }
    writeFileAtomically(configFile, text);
    return newHash;
  }

  return { configFile, historyDir, read, write, history, backupText };
}

export type ConfigFileStore = ReturnType<typeof createConfigFileStore>;
