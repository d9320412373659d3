import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();

describe('migration 020: the memory index merges 16 segments at a time', () => {
  it('sets FTS5’s automerge in the index’s config, and a reindex keeps it', () => {
    const store = openStore({ file: path.join(tempDir(), 'carapace.db') });
    try {
      const automerge = () =>
        store.db.prepare("SELECT v FROM memory_fts_config WHERE k = 'automerge'").pluck().get();
      expect(automerge()).toBe(16);
      store.memory.resetIndex();
      while (!store.memory.backfillStep().done);
      expect(automerge()).toBe(16);
      expect(store.memory.check()).toMatchObject({ ok: true });
    } finally {
      store.close();
    }
  });
});
