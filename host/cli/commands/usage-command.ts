import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { createSpendView } from '../../admin/spend-view.ts';
import { capsWithAccounts } from '../../config/group-defaults.ts';
import { MAX_REPORT_DAYS, createSpendReporter } from '../../gateway/spend/spend-report.ts';
import { openStoreReadOnly } from '../../store/read-only-store.ts';
import { UsageError, type CliContext } from '../cli-context.ts';

/**
 * `carapace usage`: the spend report from the database, opened read-only (as `status` reads it), against the
 * caps and prices of config.toml, which a running host applies as soon as the file changes. So it works with
 * the host running or stopped, and shows the very rows the gateway wrote.
 */
export async function usageCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      group: { type: 'string' },
      days: { type: 'string', default: '30' },
      json: { type: 'boolean', default: false },
    },
  });
  const days = Number(values.days);
  if (!Number.isInteger(days) || days < 1 || days > MAX_REPORT_DAYS)
    throw new UsageError(`--days must be a whole number from 1 to ${MAX_REPORT_DAYS}`);
  const config = ctx.config();
  if (!fs.existsSync(ctx.paths.databaseFile)) {
    ctx.err(`no database at ${ctx.paths.databaseFile} yet; nothing has been spent`);
    return 0;
  }
  const store = openStoreReadOnly(ctx.paths.databaseFile);
  try {
    const view = createSpendView({
      reporter: createSpendReporter(store.db),
      groupIds: () => store.groups.list().map((g) => g.id),
      gateway: () => capsWithAccounts(config, (id) => store.groups.get(id)),
      timezone: () => config.assistant.timezone,
      now: () => Date.now(),
    });
    const query = { days, ...(values.group === undefined ? {} : { groupId: values.group }) };
    if (values.group !== undefined && !store.groups.get(values.group))
      ctx.err(`note: no group "${values.group}" is registered; showing what the records hold for it`);
    if (values.json) ctx.out(JSON.stringify(view.report(query)));
    else ctx.out(view.text(query));
  } finally {
    store.close();
  }
  return 0;
}
