import Database from 'better-sqlite3';

/** Tables that grow with every message, run or reply: reading one whole costs more each day the host runs. */
export const HISTORY_TABLES = new Set([
  'messages',
  'runs',
  'outbox',
  'outbox_platform_ids',
  'audit',
  'gateway_usage',
  'gateway_usage_daily',
  'approvals',
  'tasks',
]);

/** Partial indexes that hold only live rows (pending, dead, open, running): walking one is bounded by those. */
export const LIVE_ROW_INDEXES = new Set([
  'outbox_pending',
  'outbox_pending_by_chat',
  'outbox_dead',
  'runs_running',
  'approvals_pending',
  'tasks_due',
  'tasks_open_by_group',
  'tasks_open_by_run',
]);

export interface AllowedScan {
  /** A fragment of the statement's SQL (whitespace collapsed). */
  sql: string;
  /** Why its work is bounded anyway, or why it must read everything. */
  reason: string;
}

export interface PlanFinding {
  sql: string;
  plan: string;
  problem: string;
}

const squash = (sql: string) => sql.replace(/\s+/g, ' ').trim();

/**
 * Records the SQL of every statement prepared on any better-sqlite3 connection while `fn` runs (the stores
 * prepare all of theirs when they are created). Calls through: nothing is faked.
 */
export function collectPreparedSql(fn: () => void): string[] {
  const seen = new Set<string>();
  const original = Database.prototype.prepare;
  Database.prototype.prepare = function (this: Database.Database, sql: string) {
    seen.add(squash(sql));
    return original.call(this, sql);
  } as typeof original;
  try {
    fn();
  } finally {
    Database.prototype.prepare = original;
  }
  return [...seen];
}

/** `FROM outbox o`, `JOIN groups g`: alias → table, so a plan line naming an alias is traced to its table. */
function aliases(sql: string): Map<string, string> {
  const map = new Map<string, string>();
  const re =
    /\b(?:FROM|JOIN|UPDATE|INTO)\s+(\w+)(?:\s+(?:AS\s+)?(?!WHERE|ON|SET|ORDER|GROUP|LIMIT|INDEXED|JOIN|VALUES|DEFAULT|SELECT)(\w+))?/gi;
  for (const m of sql.matchAll(re)) {
    const table = (m[1] as string).toLowerCase();
    map.set(table, table);
    if (m[2]) map.set(m[2].toLowerCase(), table);
  }
  return map;
}

/** The parameters a statement names (`@now`) or counts (`?`), each bound to 1: a plan needs values, not data. */
function placeholderArgs(sql: string): unknown[] {
  const named = [...sql.matchAll(/[@:$](\w+)/g)].map((m) => m[1] as string);
  const positional = (sql.replace(/'[^']*'/g, '').match(/\?/g) ?? []).map(() => 1);
  return named.length ? [...positional, Object.fromEntries(named.map((n) => [n, 1]))] : positional;
}

interface IndexShape {
  columns: number;
  unique: boolean;
}

function indexShapes(db: Database.Database): Map<string, IndexShape> {
  const shapes = new Map<string, IndexShape>();
  const tables = db
    .prepare<[], { name: string }>("SELECT name FROM sqlite_schema WHERE type = 'table'")
    .all();
  for (const { name } of tables) {
    for (const ix of db.pragma(`index_list(${name})`) as { name: string; unique: number }[]) {
      const columns = (db.pragma(`index_info(${ix.name})`) as unknown[]).length;
      shapes.set(ix.name, { columns, unique: ix.unique === 1 });
    }
  }
  return shapes;
}

/**
 * Runs EXPLAIN QUERY PLAN on each statement and reports every step whose work grows with history:
 * - a SCAN of a history table, unless through an index of live rows only;
 * - a SEARCH of a history table on only a leading part of a non-unique index with no range on the rest
 *   (`runs_by_group (group_id=?)` reads every run the group ever had).
 * Statements in `allowed` are skipped; each says why.
 */
export function unboundedPlans(
  db: Database.Database,
  statements: string[],
  allowed: AllowedScan[] = [],
): PlanFinding[] {
  const shapes = indexShapes(db);
  const findings: PlanFinding[] = [];
  for (const sql of statements) {
    if (allowed.some((a) => sql.includes(squash(a.sql)))) continue;
    const plan = db
      .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...placeholderArgs(sql));
    const names = aliases(sql);
    for (const { detail } of plan) {
      const step = /^(SCAN|SEARCH) (\w+)(?: USING (?:COVERING )?INDEX (\w+)(?: \(([^)]*)\))?)?/.exec(detail);
      if (!step) continue;
      const [, kind, name, index, constraint] = step;
      const table = names.get((name as string).toLowerCase()) ?? (name as string).toLowerCase();
      if (!HISTORY_TABLES.has(table) || (index && LIVE_ROW_INDEXES.has(index))) continue;
      if (kind === 'SCAN') {
        findings.push({ sql, plan: detail, problem: `reads all of ${table}` });
        continue;
      }
      const shape = index ? shapes.get(index) : undefined;
      if (!shape || shape.unique || !constraint) continue;
      const terms = constraint.split(' AND ');
      const ranged = terms.some((t) => /[<>]/.test(t));
      if (!ranged && terms.length < shape.columns)
        findings.push({ sql, plan: detail, problem: `reads all of ${table} that matches ${constraint}` });
    }
  }
  return findings;
}
