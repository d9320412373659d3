import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { openStore } from '../../store/store.ts';
import { UsageError, type CliContext } from '../cli-context.ts';

export async function auditCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { tail: { type: 'string', default: '20' }, json: { type: 'boolean', default: false } },
  });
  const n = Number(values.tail);
  if (!Number.isInteger(n) || n < 1 || n > 10_000)
    throw new UsageError('--tail must be a whole number from 1 to 10000');
  if (!fs.existsSync(ctx.paths.databaseFile)) {
    ctx.err(`no database at ${ctx.paths.databaseFile} yet; nothing has been audited`);
    return 0;
  }
  const store = openStore({ file: ctx.paths.databaseFile });
  try {
    const rows = store.audit.tail(n);
    // Said on stderr, so `--json` output stays a clean (empty) stream.
    if (rows.length === 0)
      ctx.err('no audit rows yet: decisions are audited once agents start asking for things');
    for (const row of rows) {
      if (values.json) ctx.out(JSON.stringify(row));
      else
        ctx.out(
          [
            row.at,
            row.groupId ?? '-',
            row.runId ?? '-',
            row.operation,
            row.decision,
            row.taint ?? '',
            row.reason ?? '',
            row.approver ?? '',
          ].join('\t'),
        );
    }
  } finally {
    store.close();
  }
  return 0;
}
