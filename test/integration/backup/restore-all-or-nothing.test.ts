import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { RESTORE_STEPS, restoreBackup, type RestoreDeps } from '../../../host/backup/restore-archive.ts';
import { RestoreRefused } from '../../../host/backup/restore-refused.ts';
import type { BackupPaths } from '../../../host/backup/backup-paths.ts';
import { acquireHostLock } from '../../../host/store/host-lock.ts';
import { DEFAULT_MIGRATIONS_DIR } from '../../../host/store/migrate.ts';
import { openDatabase } from '../../../host/store/open-database.ts';
import { openStore } from '../../../host/store/store.ts';
import { ensureAdminGroup } from '../../../host/admin/admin-group.ts';
import { runCli } from '../../helpers/processes.ts';
import {
  archiveAtVersion,
  installAt,
  repackArchive,
  snapshotTree,
  write,
} from '../../helpers/restore-archives.ts';
import { makeTempDir, useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs('carapace-restore-atomic-');
/** An older schema, so every restore below has migrations to run. */
const ARCHIVE_VERSION = 9;
let shared: string;
let archive: string;
/** An install in use (today's schema), copied fresh for each test. */
let template: BackupPaths;

beforeAll(async () => {
  shared = makeTempDir('carapace-restore-atomic-shared-');
  ({ archive } = await archiveAtVersion(shared, ARCHIVE_VERSION, {
    configText: '[assistant]\nname = "Archived"\n',
  }));
  template = installAt(shared, 'template');
  const store = openStore({ file: template.databaseFile });
  ensureAdminGroup(store);
  store.close();
  // A host ran here and stopped: its lock file stays (and a pid file, as a host killed outright leaves).
  acquireHostLock(template.dataDir).release();
  write(path.join(template.dataDir, 'host.pid'), '4242\n');
  write(path.join(template.dataDir, 'groups', 'main', 'AGENT.md'), 'the current notes\n');
  write(path.join(template.dataDir, 'sessions', 'main', 'history.jsonl'), '{"role":"owner"}\n');
  write(path.join(template.dataDir, 'outbox-files', 'beef-report.pdf'), 'a report\n');
  write(path.join(template.dataDir, 'channels', 'whatsapp', 'creds.json'), '{"linked":"current"}\n');
  write(path.join(template.dataDir, 'logs', 'carapace.log'), 'started\n');
  write(path.join(template.configDir, 'config.toml'), '[assistant]\nname = "Current"\n');
  write(path.join(template.configDir, 'config.toml.from-backup'), 'left by an earlier restore\n');
  write(path.join(template.configDir, '.env'), 'OPENAI_API_KEY=sk-not-in-archives\n');
  return () => fs.rmSync(shared, { recursive: true, force: true });
});

/** A copy of the install in use, and its snapshot before anything ran. */
function install(): {
  paths: BackupPaths;
  before: Record<string, string>;
  snapshot: () => Record<string, string>;
} {
  const root = tempDir();
  fs.cpSync(path.dirname(template.dataDir), path.join(root, 'install'), { recursive: true });
  const paths = installAt(root, 'install');
  const snapshot = () => snapshotTree(path.join(root, 'install'));
  return { paths, before: snapshot(), snapshot };
}

/** A rename that fails with a disk error at its `n`-th call (1-based) and at every call from `untilAll` on. */
function failingRename(n: number, untilAll = Infinity): RestoreDeps['rename'] {
  let calls = 0;
  return (from, to) => {
    calls += 1;
    if (calls === n || calls >= untilAll)
      throw Object.assign(new Error(`EIO: i/o error, rename '${from}' -> '${to}'`), { code: 'EIO' });
    fs.renameSync(from, to);
  };
}

async function refusal(run: Promise<unknown>): Promise<string> {
  const err: unknown = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(RestoreRefused);
  const message = (err as RestoreRefused).message;
  expect(message).not.toContain('\n');
  return message;
}

describe('restore is all or nothing', () => {
  it('restores an older archive into a folder in use: the current files aside, live login and config kept, no lock or pid file left', async () => {
    const { paths } = install();
    const report = await restoreBackup(paths, archive);
    expect(report.join('\n')).toMatch(/migrated the archive's database from schema version 9 to/);
    const data = fs.readdirSync(paths.dataDir).sort();
    expect(data).toEqual(
      expect.arrayContaining(['carapace.db', 'channels', 'groups', 'logs', 'outbox-files', 'sessions']),
    );
    expect(data.filter((n) => /^host\.|^\.restore-/.test(n))).toEqual([]);
    const aside = data.find((n) => n.startsWith('before-restore-')) ?? 'none';
    expect(fs.readFileSync(path.join(paths.dataDir, aside, 'groups', 'main', 'AGENT.md'), 'utf8')).toBe(
      'the current notes\n',
    );
    expect(fs.existsSync(path.join(paths.dataDir, aside, 'carapace.db'))).toBe(true);
    expect(fs.readFileSync(path.join(paths.dataDir, 'groups', 'family', 'AGENT.md'), 'utf8')).toBe(
      'Sam likes short answers\n',
    );
    expect(fs.readFileSync(path.join(paths.dataDir, 'channels', 'whatsapp', 'creds.json'), 'utf8')).toBe(
      '{"linked":"current"}\n',
    );
    expect(fs.readFileSync(path.join(paths.configDir, 'config.toml'), 'utf8')).toContain('Current');
    expect(fs.readFileSync(path.join(paths.configDir, 'config.toml.from-backup'), 'utf8')).toContain(
      'Archived',
    );
    expect(fs.readdirSync(paths.configDir).sort()).toEqual([
      '.env',
      'config.toml',
      'config.toml.from-backup',
    ]);
  });

  it.each(RESTORE_STEPS)(
    'a disk error at step "%s" leaves the data and config folders byte for byte as they were',
    async (step) => {
      const { paths, before, snapshot } = install();
      const message = await refusal(
        restoreBackup(paths, archive, {
          beforeStep: (s) => {
            if (s === step) throw new Error('EIO: i/o error, simulated');
          },
        }),
      );
      expect(message).toMatch(/^restore failed while .*\(EIO: i\/o error, simulated\); nothing was changed/);
      expect(snapshot()).toEqual(before);
    },
  );

  it('a rename failing at any point of the swap takes back every rename already done', async () => {
    let renames = 0;
    await restoreBackup(install().paths, archive, {
      rename: (from, to) => {
        renames += 1;
        fs.renameSync(from, to);
      },
    });
    expect(renames).toBeGreaterThan(8);
    for (let n = 1; n <= renames; n++) {
      const { paths, before, snapshot } = install();
      const message = await refusal(restoreBackup(paths, archive, { rename: failingRename(n) }));
      expect(message).toMatch(
        /^restore failed while putting the restored files in place \(EIO: .*\); nothing was changed/,
      );
      expect(snapshot(), `rename ${n} of ${renames} failed`).toEqual(before);
    }
  });

  it('when a rename cannot be taken back either, says where everything is and keeps the unpacked archive', async () => {
    const { paths } = install();
    const message = await refusal(restoreBackup(paths, archive, { rename: failingRename(4, 4) }));
    expect(message).toMatch(
      /could not move everything back: .*put them back by hand before starting the host/,
    );
    const staging = fs.readdirSync(paths.dataDir).filter((n) => n.startsWith('.restore-'));
    expect(staging).toHaveLength(1);
  });

  it('refuses an archive that is not one, or is cut short, changing nothing', async () => {
    const root = tempDir();
    const garbage = path.join(root, 'garbage.tar.gz');
    fs.writeFileSync(garbage, 'not an archive at all');
    const cut = path.join(root, 'cut.tar.gz');
    const bytes = fs.readFileSync(archive);
    fs.writeFileSync(cut, bytes.subarray(0, Math.floor(bytes.length / 2)));
    for (const bad of [garbage, cut]) {
      const { paths, before, snapshot } = install();
      expect(await refusal(restoreBackup(paths, bad))).toMatch(
        /is not a readable archive .*nothing was restored: use another archive/,
      );
      expect(snapshot()).toEqual(before);
    }
  });

  it('refuses an archive whose database fails integrity_check although its checksums match, changing nothing', async () => {
    const damaged = repackArchive(archive, path.join(tempDir(), 'damaged.tar.gz'), (dir) => {
      const db = path.join(dir, 'data', 'carapace.db');
      const bytes = fs.readFileSync(db);
      // Past the header and the schema page: table pages, whose damage integrity_check reports.
      bytes.fill(0x5a, 4096 * 2 + 100, 4096 * 4);
      fs.writeFileSync(db, bytes);
    });
    const { paths, before, snapshot } = install();
    expect(await refusal(restoreBackup(paths, damaged))).toMatch(
      /^the archive's database fails its integrity check \(Tree .*\); nothing was restored: use another archive$/,
    );
    expect(snapshot()).toEqual(before);
  });

  it('refuses an archive whose database does not migrate, changing nothing', async () => {
    const migrationsDir = path.join(tempDir(), 'migrations');
    fs.cpSync(DEFAULT_MIGRATIONS_DIR, migrationsDir, { recursive: true });
    const next = String(fs.readdirSync(migrationsDir).length + 1).padStart(3, '0');
    fs.writeFileSync(
      path.join(migrationsDir, `${next}-broken.sql`),
      'ALTER TABLE no_such_table ADD COLUMN x TEXT;\n',
    );
    const { paths, before, snapshot } = install();
    expect(await refusal(restoreBackup(paths, archive, { migrationsDir }))).toMatch(
      new RegExp(
        `does not migrate to this version of Carapace \\(migration ${Number(next)}-broken failed: no such table`,
      ),
    );
    expect(snapshot()).toEqual(before);
  });

  it('refuses, in one line through the CLI, an archive made by a newer Carapace, and says to upgrade', async () => {
    const newer = repackArchive(archive, path.join(tempDir(), 'newer.tar.gz'), (dir) => {
      const db = openDatabase(path.join(dir, 'data', 'carapace.db'));
      db.prepare(
        "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (99, 'future', 'x', 'now')",
      ).run();
      db.close();
    });
    const { paths, before, snapshot } = install();
    const r = await runCli(['restore', newer], {
      CARAPACE_CONFIG_DIR: paths.configDir,
      CARAPACE_DATA_DIR: paths.dataDir,
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^the archive was made by a newer Carapace than this one \(the database has migration 99, .*\); nothing was restored: upgrade Carapace .*then restore again\n$/,
    );
    expect(snapshot()).toEqual(before);
  });

  it('into a fresh folder, a failure leaves no data or config folder behind', async () => {
    const root = tempDir();
    const paths = installAt(root, 'fresh');
    const message = await refusal(
      restoreBackup(paths, archive, {
        beforeStep: (s) => {
          if (s === 'swap') throw new Error('ENOSPC: no space left on device, simulated');
        },
      }),
    );
    expect(message).toContain('nothing was changed');
    expect(fs.readdirSync(root)).toEqual([]);
  });

  it('never takes a lock or pid file from an archive', async () => {
    const crafted = repackArchive(archive, path.join(tempDir(), 'crafted.tar.gz'), (dir) => {
      write(path.join(dir, 'data', 'host.lock'), 'not a lock\n');
      write(path.join(dir, 'data', 'host.pid'), '1\n');
    });
    const paths = installAt(tempDir(), 'fresh');
    await restoreBackup(paths, crafted);
    expect(fs.existsSync(path.join(paths.dataDir, 'host.lock'))).toBe(false);
    expect(fs.existsSync(path.join(paths.dataDir, 'host.pid'))).toBe(false);
  });
});
