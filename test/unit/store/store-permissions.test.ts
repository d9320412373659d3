import fs from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { acquireHostLock } from '../../../host/store/host-lock.ts';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const mode = (file: string) => fs.statSync(file).mode & 0o777;

it('keeps the database, its write-ahead log and the host lock owner-only, and tightens an existing 0644 database', () => {
  const dir = tempDir();
  const file = path.join(dir, 'carapace.db');
  const store = openStore({ file });
  store.groups.list();
  expect(mode(file)).toBe(0o600);
  expect(mode(`${file}-wal`)).toBe(0o600);
  store.close();

  fs.chmodSync(file, 0o644);
  openStore({ file }).close();
  expect(mode(file)).toBe(0o600);

  const lock = acquireHostLock(dir);
  expect(mode(path.join(dir, 'host.lock'))).toBe(0o600);
  lock.release();
});
