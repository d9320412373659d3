import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createSpendReporter } from '../../../host/gateway/spend/spend-report.ts';
import { createSqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import { openStoreReadOnly } from '../../../host/store/read-only-store.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { collectPreparedSql, unboundedPlans, type AllowedScan } from '../../helpers/query-plan-check.ts';
import { seedHistory } from '../../helpers/seed-history.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

/** The few statements that may read a history table in full or by a bare prefix, and why that is fine. */
const ALLOWED: AllowedScan[] = [
  {
    sql: 'FROM runs ORDER BY id DESC LIMIT ?',
    reason: '`status` lists the newest runs: a walk down the primary key that stops after `limit` rows',
  },
  {
    sql: 'FROM audit ORDER BY id DESC LIMIT ?',
    reason: 'the audit tail: a walk down the primary key that stops after `n` rows',
  },
  {
    sql: 'SELECT MAX(id) AS id FROM outbox WHERE channel = ? AND chat_id = ?',
    reason: "MAX over the index's last column is one seek to the end of the chat's range",
  },
  {
    sql: "FROM tasks ORDER BY CASE WHEN status IN ('active', 'paused')",
    reason:
      'the owner\'s "tasks" listing reads every task to put open ones first; tasks are made by hand or by an ' +
      'agent at human pace, hundreds rather than millions',
  },
  {
    sql: "FROM tasks WHERE group_id = ? ORDER BY CASE WHEN status IN ('active', 'paused')",
    reason: "one group's task listing for the owner, as above",
  },
  {
    sql: 'DELETE FROM groups WHERE id = ?',
    reason: 'removing a group removes its history (foreign keys cascade): the work is what it deletes, once',
  },
  {
    sql: 'FROM outbox_platform_ids WHERE outbox_id = ?',
    reason: 'the platform ids of one piece: as many as the platform split it into',
  },
  {
    sql: 'FROM audit WHERE (@groupId IS NULL OR group_id = @groupId)',
    reason:
      "the web console's audit page: a walk down the primary key that stops after a page of matching rows; " +
      'a filter that matches rarely reads further back, which is what the owner asked for',
  },
  {
    sql: "FROM approvals WHERE status != 'pending' ORDER BY rowid DESC LIMIT ?",
    reason: 'the decided approvals on the console: a walk down the rowid that stops after `limit` rows',
  },
  {
    sql: 'FROM audit WHERE run_id = ? ORDER BY id LIMIT 2000',
    reason: "one run's timeline on the console: that run's rows, through audit_by_run, at most 2000",
  },
  {
    sql: 'FROM outbox WHERE run_id = ? ORDER BY id LIMIT 500',
    reason: "one run's replies on the console, through outbox_by_run, at most 500",
  },
  {
    sql: 'FROM gateway_usage WHERE day = ?',
    reason: "one day's usage for `status`: bounded by a day's runs; older days are rolled up by retention",
  },
];

let dir: string;
let file: string;
let statements: string[];

beforeAll(() => {
  dir = makeTempDir();
  file = path.join(dir, 'carapace.db');
  seedHistory(file, {
    groups: 20,
    days: 3,
    messagesPerDay: 50,
    triggerEvery: 5,
    channel: 'local',
    endAt: Date.parse('2026-03-01T00:00:00Z'),
  });
  statements = collectPreparedSql(() => {
    const store = openStore({ file });
    createSqliteUsageStore(store.db);
    createSpendReporter(store.db);
    store.channelState('local');
    store.close();
    openStoreReadOnly(file).close();
  });
  return () => removeTempDir(dir);
});

let store: Store | undefined;
afterEach(() => store?.close());

describe('query plans of the store', () => {
  it('collects the statements of every store, the gateway usage store and the read-only store', () => {
    expect(statements.length).toBeGreaterThan(60);
    expect(statements.some((s) => s.includes('FROM gateway_usage WHERE day = ?'))).toBe(true);
    expect(statements.some((s) => s.includes('INSERT INTO messages'))).toBe(true);
    expect(statements.some((s) => s.includes('FROM channel_state'))).toBe(true);
  });

  it.each([
    ['without statistics (as a host runs)', false],
    ['after ANALYZE', true],
  ])('reads no table that grows with history in full, %s', (_name, analyze) => {
    store = openStore({ file });
    if (analyze) store.db.exec('ANALYZE');
    expect(unboundedPlans(store.db, statements, ALLOWED)).toEqual([]);
    if (analyze) store.db.exec('DROP TABLE sqlite_stat1');
  });

  it('reports a planted full scan and a planted read of a whole group history', () => {
    store = openStore({ file });
    const findings = unboundedPlans(store.db, [
      'SELECT * FROM outbox WHERE text = ?',
      'SELECT COUNT(*) AS n FROM runs r WHERE r.group_id = ?',
      "SELECT * FROM outbox WHERE status = 'pending' AND next_attempt_at <= ?",
    ]);
    expect(findings.map((f) => f.problem)).toEqual([
      'reads all of outbox',
      'reads all of runs that matches group_id=?',
    ]);
  });

  it('lets an allowed statement through, and only that one', () => {
    store = openStore({ file });
    const planted = ['SELECT * FROM messages WHERE text = ?', 'SELECT * FROM audit WHERE reason = ?'];
    const findings = unboundedPlans(store.db, planted, [
      { sql: 'FROM messages WHERE text = ?', reason: 'planted' },
    ]);
    expect(findings.map((f) => f.sql)).toEqual(['SELECT * FROM audit WHERE reason = ?']);
  });
});
