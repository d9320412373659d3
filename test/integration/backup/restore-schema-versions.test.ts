import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { restoreBackup } from '../../../host/backup/restore-archive.ts';
import { openStore } from '../../../host/store/store.ts';
import { runCli } from '../../helpers/processes.ts';
import {
  archiveAtVersion,
  installAt,
  LATEST_VERSION,
  SEEDED,
  snapshotTree,
} from '../../helpers/restore-archives.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-restore-versions-');
const versions = Array.from({ length: LATEST_VERSION }, (_, i) => i + 1);

function restoredRows(file: string) {
  const db = new Database(file, { readonly: true });
  try {
    const migrations = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
    const secret = db.prepare('SELECT secret FROM install_secret').pluck().get() as string;
    return { migrations, secret };
  } finally {
    db.close();
  }
}

describe('restore of an archive made at each schema version the project has shipped', () => {
  it.each(versions)(
    'brings an archive from schema version %i to the latest, with its rows, and the host store opens it',
    async (version) => {
      const root = tempDir();
      const { archive, paths: source } = await archiveAtVersion(root, version);
      const archivedSecret =
        version >= 11 ? restoredRows(source.databaseFile).secret : 'none before migration 11';
      const target = installAt(root, 'restored');

      const report = await restoreBackup(target, archive);

      expect(report.join('\n')).toMatch(/restored the database/);
      if (version < LATEST_VERSION)
        expect(report).toContain(
          `migrated the archive's database from schema version ${version} to ${LATEST_VERSION}`,
        );
      const { migrations, secret } = restoredRows(target.databaseFile);
      expect(migrations).toEqual(versions);
      expect(secret).toMatch(/^[0-9a-f]{64}$/);
      expect(secret).not.toBe(archivedSecret);

      const store = openStore({ file: target.databaseFile });
      try {
        expect(store.groups.list().map((g) => g.id)).toEqual(expect.arrayContaining(SEEDED.groups));
        expect(store.messages.after('family', 0).map((m) => m.text)).toEqual(SEEDED.familyMessages);
        const due = store.outbox.due();
        expect(due.map((p) => p.text)).toContain(SEEDED.pendingText);
        expect(due.every((p) => p.sendKey.length > 0)).toBe(true);
        expect(store.db.prepare("SELECT count(*) FROM outbox WHERE status = 'sent'").pluck().get()).toBe(1);
        if (version >= 3) expect(store.db.prepare('SELECT count(*) FROM approvals').pluck().get()).toBe(1);
        if (version >= 4) expect(store.db.prepare('SELECT count(*) FROM tasks').pluck().get()).toBe(1);
        if (version >= 15) {
          const file = due.find((p) => p.attachment)?.attachment;
          expect(file?.path).toBe(path.join(target.dataDir, 'outbox-files', SEEDED.attachedFile.name));
          expect(fs.readFileSync(file?.path ?? '', 'utf8')).toBe(SEEDED.attachedFile.bytes);
        }
      } finally {
        store.close();
      }
      expect(fs.readFileSync(path.join(target.dataDir, 'groups', 'family', 'AGENT.md'), 'utf8')).toBe(
        'Sam likes short answers\n',
      );
      expect(fs.readFileSync(path.join(target.configDir, 'config.toml'), 'utf8')).toContain('Kit');
      // Nothing but what the host will use: no lock, pid, staging or journal files.
      expect(fs.readdirSync(target.dataDir).sort()).toEqual([
        'carapace.db',
        'channels',
        'groups',
        'outbox-files',
        'sessions',
      ]);
    },
  );

  it('through the CLI: an archive of the previous schema restores into a fresh folder with its config.toml, no lock file, and says what it did', async () => {
    const root = tempDir();
    const { archive } = await archiveAtVersion(root, LATEST_VERSION - 1);
    const target = installAt(root, 'fresh');
    const r = await runCli(['restore', archive], {
      CARAPACE_CONFIG_DIR: target.configDir,
      CARAPACE_DATA_DIR: target.dataDir,
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      `migrated the archive's database from schema version ${LATEST_VERSION - 1} to ${LATEST_VERSION}`,
    );
    expect(r.stdout).toContain(`restored ${path.join(target.configDir, 'config.toml')}`);
    expect(fs.readFileSync(path.join(target.configDir, 'config.toml'), 'utf8')).toContain('Kit');
    const tree = Object.keys(snapshotTree(target.dataDir)).map((p) => path.relative(target.dataDir, p));
    expect(tree.filter((p) => /host\.(lock|pid)|\.restore-|-wal$|-journal$/.test(p))).toEqual([]);
  });
});
