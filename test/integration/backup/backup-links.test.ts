import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { createBackup } from '../../../host/backup/backup-archive.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-backup-links-');

describe('a backup of group folders a container wrote', () => {
  it('carries plain files and skips links and special files, never copying what they point to', async () => {
    const dir = tempDir();
    const dataDir = path.join(dir, 'data');
    const group = path.join(dataDir, 'groups', 'family');
    fs.mkdirSync(group, { recursive: true });
    fs.mkdirSync(path.join(dir, 'config'));
    new Database(path.join(dataDir, 'carapace.db')).close();
    const hostFile = path.join(dir, 'host-secret');
    fs.writeFileSync(hostFile, 'the host secret');
    fs.writeFileSync(path.join(group, 'notes.txt'), 'our notes');
    fs.symlinkSync(hostFile, path.join(group, 'link'));
    fs.linkSync(hostFile, path.join(group, 'hard'));
    fs.symlinkSync(dir, path.join(group, 'up'));
    execFileSync('mkfifo', [path.join(group, 'pipe')]);

    const archive = path.join(dir, 'backup.tar.gz');
    const result = await createBackup(
      { configDir: path.join(dir, 'config'), dataDir, databaseFile: path.join(dataDir, 'carapace.db') },
      archive,
    );

    expect(result.skipped).toEqual(
      ['hard', 'link', 'pipe', 'up'].map((name) => `data/groups/family/${name}`),
    );
    const out = path.join(dir, 'out');
    fs.mkdirSync(out);
    execFileSync('tar', ['-xzf', archive, '-C', out]);
    expect(fs.readdirSync(path.join(out, 'data', 'groups', 'family'))).toEqual(['notes.txt']);
    const carried = fs
      .readdirSync(out, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => fs.readFileSync(path.join(e.parentPath, e.name), 'utf8'));
    expect(carried.length).toBeGreaterThan(1);
    expect(carried.filter((text) => text.includes('the host secret'))).toEqual([]);
  });
});
