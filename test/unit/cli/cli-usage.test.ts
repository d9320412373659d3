import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createDayFormatter } from '../../../host/gateway/spend/day.ts';
import { addDays, type SpendReport } from '../../../host/gateway/spend/spend-report.ts';
import { createSqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import { openStore } from '../../../host/store/store.ts';
import { runCli } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let dirs: { configDir: string; dataDir: string };

beforeEach(() => {
  const root = tempDir();
  dirs = { configDir: path.join(root, 'config'), dataDir: path.join(root, 'data') };
  fs.mkdirSync(dirs.configDir);
  fs.mkdirSync(dirs.dataDir, { mode: 0o700 });
  fs.writeFileSync(
    path.join(dirs.configDir, 'config.toml'),
    '[assistant]\ntimezone = "UTC"\n[gateway]\ndaily_cap_usd = 3\n',
  );
});

/** A database with spend 3 and 20 days ago (in the last 30 days but not the last 7), as the gateway writes it. */
function seed(): void {
  const store = openStore({ file: path.join(dirs.dataDir, 'carapace.db') });
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  const today = createDayFormatter('UTC')(Date.now());
  const usage = createSqliteUsageStore(store.db);
  const spend = (runId: string, day: string, costMicros: number) =>
    usage.recordUsage({
      runId,
      groupId: 'family',
      day,
      model: 'gpt-4.1-mini',
      promptTokens: 10,
      completionTokens: 5,
      costMicros,
    });
  spend('1', addDays(today, -3), 250_000);
  spend('2', addDays(today, -20), 1_000_001);
  store.close();
}

describe('carapace usage', () => {
  it('prints the report from the database read-only, as JSON with exact micro-dollars', async () => {
    seed();
    const r = await runCli(dirs, ['usage', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as SpendReport;
    const family = report.groups.find((g) => g.groupId === 'family');
    expect(family?.periods.slice(1).map((p) => p.costMicros)).toEqual([250_000, 1_250_001]);
    expect(family?.cap).toEqual({ usd: 3, micros: 3_000_000, setting: '[gateway].daily_cap_usd' });
    expect(report.topRuns.map((run) => [run.runId, run.costMicros])).toEqual([
      ['2', 1_000_001],
      ['1', 250_000],
    ]);
  });

  it('cuts the periods at --days and keeps to --group', async () => {
    seed();
    const r = await runCli(dirs, ['usage', '--group', 'family', '--days', '7']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^- family: \$0\.0000 of \$3\.0000 \(0 %\); 7 days \$0\.2500$/m);
    expect(r.stdout).not.toContain('30 days');
    expect(r.stdout).not.toMatch(/^- main:/m);
  });

  it('notes a group that is not registered, and shows what the records hold for it', async () => {
    seed();
    const r = await runCli(dirs, ['usage', '--group', 'nosuch']);
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('no group "nosuch" is registered');
    expect(r.stdout).toContain('Nothing spent in this period.');
  });

  it('refuses a --days out of range with exit 2, saying what is allowed', async () => {
    for (const days of ['0', '367', 'week']) {
      const r = await runCli(dirs, ['usage', '--days', days]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--days must be a whole number from 1 to 366');
    }
  });

  it('says there is nothing yet when the host never created its database', async () => {
    const r = await runCli(dirs, ['usage']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^no database at .*carapace\.db yet; nothing has been spent/);
    expect(fs.existsSync(path.join(dirs.dataDir, 'carapace.db'))).toBe(false);
  });
});
