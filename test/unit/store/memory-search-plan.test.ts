import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DOCUMENTS_BY_IDS } from '../../../host/store/memory-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let store: Store;
afterEach(() => store.close());

describe('the memory search’s reads of documents', () => {
  it('reads each candidate document by its id, then its message by id: never the group’s messages', () => {
    store = openStore({ file: path.join(tempDir(), 'carapace.db') });
    // With statistics as a month of history gives them, too: many messages to a group, few documents.
    store.db.exec('ANALYZE');
    const plan = (
      store.db.prepare(`EXPLAIN QUERY PLAN ${DOCUMENTS_BY_IDS}`).all({
        ids: '[1]',
        group: 'family',
        since: '',
        until: 'z',
        through: 10,
        sender: null,
      }) as { detail: string }[]
    ).map((p) => p.detail);
    expect(plan[0]).toMatch(/^SEARCH d USING INTEGER PRIMARY KEY \(rowid=\?\)/);
    expect(plan).toContain('SEARCH m USING INTEGER PRIMARY KEY (rowid=?)');
    expect(plan.some((d) => /messages_by_group|SCAN m\b/.test(d))).toBe(false);
  });
});
