import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openStoreReadOnly } from '../../../host/store/read-only-store.ts';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

describe('the read-only store of carapace status', () => {
  it('reads what the host wrote, while the host holds its write lock, and cannot write', () => {
    const file = path.join(tempDir(), 'carapace.db');
    const host = openStore({ file });
    host.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
    const run = host.runs.start('family', 1, 7);
    // The host is in the middle of a write: a status must still answer, without waiting for it.
    host.db.exec('BEGIN IMMEDIATE');
    const status = openStoreReadOnly(file);
    try {
      expect(status.db.readonly).toBe(true);
      expect(status.runs.recent(10).map((r) => r.id)).toEqual([run.id]);
      expect(status.outbox.pendingCount()).toBe(0);
      expect(() => status.db.exec("INSERT INTO groups (id) VALUES ('x')")).toThrow(/readonly/);
    } finally {
      status.close();
      host.db.exec('COMMIT');
      host.close();
    }
  });

  it('does not create or migrate a database', () => {
    const dir = tempDir();
    expect(() => openStoreReadOnly(path.join(dir, 'missing.db'))).toThrow();
    expect(fs.readdirSync(dir)).toEqual([]);
    const empty = path.join(dir, 'empty.db');
    new Database(empty).close();
    expect(() => openStoreReadOnly(empty)).toThrow(/no such table/);
    const check = new Database(empty, { readonly: true });
    expect(check.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get()).toEqual({
      n: 0,
    });
    check.close();
  });
});
