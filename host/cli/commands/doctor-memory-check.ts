import fs from 'node:fs';
import Database from 'better-sqlite3';
import { errorMessage } from '../../errors/error-message.ts';
import { createMemoryStore } from '../../store/memory-store.ts';
import { registerMemoryTerms } from '../../store/memory-terms.ts';
import type { Check } from './doctor-check.ts';

/**
 * The memory index against the store of record (messages and notes), read-only: every stored row found,
 * nothing else in it. A backfill still under way is reported, not failed.
 */
export const checkMemoryIndex: Check = async (ctx) => {
  const name = 'memory index';
  if (!fs.existsSync(ctx.paths.databaseFile)) return { name, ok: true, detail: 'no database yet' };
  const db = new Database(ctx.paths.databaseFile, { readonly: true, fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // Statements on tables the memory index's triggers watch compile those triggers, and so the function.
    registerMemoryTerms(db);
    const table = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'memory_fts'").get();
    if (!table) return { name, ok: true, detail: 'not created yet: the host makes it at its next start' };
    const memory = createMemoryStore(db);
    const check = memory.check();
    const progress = memory.backfillProgress();
    if (!check.ok)
      return {
        name,
        ok: false,
        detail: check.problems.join('; '),
        fix: 'carapace memory reindex (rebuilds it from the stored messages and note files)',
      };
    return {
      name,
      ok: true,
      detail: progress.done
        ? 'whole: every stored message and note is indexed'
        : `messages ${progress.nextId} to ${progress.through} wait to be indexed (the host takes them in every few seconds; search reads them directly meanwhile)`,
    };
  } catch (err) {
    return { name, ok: false, detail: errorMessage(err), fix: 'carapace memory reindex' };
  } finally {
    db.close();
  }
};
