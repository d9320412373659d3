import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createBackup } from '../../host/backup/backup-archive.ts';
import { listFiles, MANIFEST_FILE, sha256File } from '../../host/backup/backup-manifest.ts';
import type { BackupPaths } from '../../host/backup/backup-paths.ts';
import { DEFAULT_MIGRATIONS_DIR, migrate, readMigrations } from '../../host/store/migrate.ts';
import { openDatabase, type Db } from '../../host/store/open-database.ts';

/** Every schema version the project has shipped: migrations 1..N for each N, the last being today's. */
export const MIGRATIONS = readMigrations(DEFAULT_MIGRATIONS_DIR);
export const LATEST_VERSION = MIGRATIONS.length;

/** A data folder and config folder side by side under `root/name`, as the CLI resolves them. */
export function installAt(root: string, name: string): BackupPaths {
  const dataDir = path.join(root, name, 'data');
  return {
    configDir: path.join(root, name, 'config'),
    dataDir,
    databaseFile: path.join(dataDir, 'carapace.db'),
  };
}

/** What seedAtVersion wrote, for a test to find again after the restore. */
export const SEEDED = {
  groups: ['main', 'family'],
  familyMessages: ['bins go out tonight', 'who has the car?', 'Kit, remind me at 7'],
  pendingText: 'the reminder is set',
  sentText: 'good morning',
  attachedFile: { name: 'c0ffee-chart.png', bytes: 'the chart\n' },
};

/**
 * Representative rows for the tables the schema has at `version` (groups, messages and outbox pieces since
 * 1, approvals since 3, tasks since 4, a message's media since 14, a file to send since 15), written with
 * plain SQL: the store's code is today's and would not fit an older schema.
 */
function seedRows(db: Db, version: number, outboxFilesDir: string): void {
  const at = '2026-11-22T08:00:00.000Z';
  const group = db.prepare(
    'INSERT INTO groups (id, channel, chat_id, name, is_admin, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  group.run('main', 'local', 'main', 'Main', 1, at);
  group.run('family', 'telegram', '-1001', 'Family', 0, at);
  const message = db.prepare(
    `INSERT INTO messages (group_id, channel, chat_id, external_id, sender_id, sender_name, text, sent_at,
       triggers, received_at) VALUES ('family', 'telegram', '-1001', ?, 'u1', 'Sam', ?, ?, ?, ?)`,
  );
  SEEDED.familyMessages.forEach((text, i) => message.run(`m${i}`, text, at, i === 2 ? 1 : 0, at));
  const piece = db.prepare(
    `INSERT INTO outbox (idempotency_key, group_id, channel, chat_id, text, status, next_attempt_at, created_at)
       VALUES (?, 'family', 'telegram', '-1001', ?, ?, 0, ?)`,
  );
  piece.run('run:1:1', SEEDED.sentText, 'sent', at);
  piece.run('run:2:1', SEEDED.pendingText, 'pending', at);
  if (version >= 3) {
    db.prepare(
      `INSERT INTO approvals (id, group_id, operation, reason, params_json, params_hash, created_at, expires_at)
         VALUES ('a1', 'family', 'web_fetch', 'needs the net', '{}', 'h', 1, 2)`,
    ).run();
  }
  if (version >= 4) {
    db.prepare(
      `INSERT INTO tasks (id, group_id, prompt, schedule_json, status, next_run_at, created_at)
         VALUES ('t1', 'family', 'water the plants', '{"kind":"once","at":"2026-12-01T08:00:00Z"}', 'active', 1, 1)`,
    ).run();
  }
  // From 11 on, the host stores each piece with the send key its message id is made from.
  if (version >= 11) db.prepare('UPDATE outbox SET send_key = idempotency_key').run();
  if (version >= 14) {
    db.prepare("UPDATE messages SET media = ? WHERE external_id = 'm0'").run(
      JSON.stringify({ kind: 'photo', path: 'media/m0.jpg' }),
    );
  }
  if (version >= 15) {
    const copy = path.join(outboxFilesDir, SEEDED.attachedFile.name);
    fs.mkdirSync(outboxFilesDir, { recursive: true });
    fs.writeFileSync(copy, SEEDED.attachedFile.bytes);
    db.prepare(
      `INSERT INTO outbox (idempotency_key, group_id, channel, chat_id, text, status, next_attempt_at, created_at,
         send_key, attachment) VALUES ('run:2:2', 'family', 'telegram', '-1001', '', 'pending', 0, ?, 'run:2:2', ?)`,
    ).run(at, JSON.stringify({ path: copy, fileName: 'chart.png', mime: 'image/png', kind: 'document' }));
  }
}

/**
 * An install as Carapace at schema `version` left it (database migrated 1..version with rows in it, a group
 * folder, a session, a WhatsApp login and config.toml), and an archive of it made by the backup code.
 */
export async function archiveAtVersion(
  root: string,
  version: number,
  options: { configText?: string } = {},
): Promise<{ archive: string; paths: BackupPaths }> {
  const paths = installAt(root, `v${version}`);
  const db = openDatabase(paths.databaseFile);
  try {
    migrate(db, MIGRATIONS.slice(0, version));
    seedRows(db, version, path.join(paths.dataDir, 'outbox-files'));
  } finally {
    db.close();
  }
  write(path.join(paths.dataDir, 'groups', 'family', 'AGENT.md'), 'Sam likes short answers\n');
  write(path.join(paths.dataDir, 'sessions', 'family', 'history.jsonl'), '{"role":"user"}\n');
  write(path.join(paths.dataDir, 'channels', 'whatsapp', 'creds.json'), '{"linked":"archived"}\n');
  write(path.join(paths.configDir, 'config.toml'), options.configText ?? '[assistant]\nname = "Kit"\n');
  const archive = path.join(root, `v${version}.tar.gz`);
  await createBackup(paths, archive);
  return { archive, paths };
}

/**
 * Unpacks `archive`, lets `edit` change the files, writes the manifest again so every checksum matches, and
 * packs it as `out`: an archive that is consistent but says something else.
 */
export function repackArchive(archive: string, out: string, edit: (unpacked: string) => void): string {
  const work = `${out}.work`;
  fs.mkdirSync(work);
  execFileSync('tar', ['-xzf', archive, '-C', work]);
  edit(work);
  const manifestFile = path.join(work, MANIFEST_FILE);
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as { files: Record<string, string> };
  manifest.files = {};
  for (const rel of listFiles(work).files)
    if (rel !== MANIFEST_FILE) manifest.files[rel] = sha256File(path.join(work, rel));
  fs.writeFileSync(manifestFile, JSON.stringify(manifest));
  execFileSync('tar', ['-czf', out, '-C', work, '.']);
  fs.rmSync(work, { recursive: true });
  return out;
}

/**
 * Every entry under the roots with its type, permission bits and, for a file, the SHA-256 of its bytes: two
 * equal snapshots are byte-identical trees. A missing root is recorded as missing.
 */
export function snapshotTree(...roots: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (p: string) => {
    const stat = fs.lstatSync(p, { throwIfNoEntry: false });
    const mode = stat ? (stat.mode & 0o7777).toString(8) : '';
    if (!stat) out[p] = 'missing';
    else if (stat.isSymbolicLink()) out[p] = `link ${fs.readlinkSync(p)}`;
    else if (stat.isDirectory()) {
      out[p] = `folder ${mode}`;
      for (const name of fs.readdirSync(p).sort()) walk(path.join(p, name));
    } else {
      const sha = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
      out[p] = `file ${mode} ${sha}`;
    }
  };
  for (const root of roots) walk(root);
  return out;
}

export function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}
