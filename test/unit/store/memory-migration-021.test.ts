import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

describe('migration 021: the memory index gathers a whole step in memory before writing it', () => {
  it('sets FTS5’s hashsize in the index’s config, and a reindex keeps it', () => {
    const store = openStore({ file: path.join(tempDir(), 'carapace.db') });
    try {
      const hashsize = () =>
        store.db.prepare("SELECT v FROM memory_fts_config WHERE k = 'hashsize'").pluck().get();
      expect(hashsize()).toBe(16 * 1024 * 1024);
      store.memory.resetIndex();
      while (!store.memory.backfillStep().done);
      expect(hashsize()).toBe(16 * 1024 * 1024);
      expect(store.memory.check()).toMatchObject({ ok: true });
    } finally {
      store.close();
    }
  });
});
