import fs from 'node:fs';
import { createDayFormatter } from '../../gateway/spend/day.ts';
import { checkPrices, modelsInUse, priceCheckLines } from '../../gateway/spend/price-check.ts';
import { priceSource } from '../../gateway/spend/price-table.ts';
import { createSpendReporter } from '../../gateway/spend/spend-report.ts';
import { openStoreReadOnly } from '../../store/read-only-store.ts';
import type { CliContext } from '../cli-context.ts';
import type { Check } from './doctor-check.ts';

/** Models with spend in the last 7 days, from the records (read-only); none without a database. */
function seenModels(ctx: CliContext, now: number): string[] {
  if (!fs.existsSync(ctx.paths.databaseFile)) return [];
  const config = ctx.config();
  const store = openStoreReadOnly(ctx.paths.databaseFile);
  try {
    const today = createDayFormatter(config.assistant.timezone)(now);
    return createSpendReporter(store.db)({ today, days: 7, topRuns: 0 }, config.gateway).models.map(
      (m) => m.model,
    );
  } finally {
    store.close();
  }
}

/**
 * Whether the models in use have prices the spend cap can trust: a model without one is charged the ceiling
 * (the cap binds early, so the check fails); a listed price more than six months old, or a table that old,
 * is said (the check passes: a stale price can be high or low, and the owner checks it).
 */
export function checkModelPrices(now: () => number = Date.now): Check {
  return async (ctx) => {
    const config = ctx.config();
    const at = now();
    const models = modelsInUse(config, seenModels(ctx, at), config.media.transcription.model);
    const check = checkPrices(models, config.gateway, at);
    const where = models
      .map((m) => {
        const source = priceSource(m, config.gateway.prices);
        return `${m} (${source === 'override' ? '[gateway.prices]' : source === 'table' ? 'table' : 'no price'})`;
      })
      .join(', ');
    const problems = priceCheckLines(check);
    return {
      name: 'model prices',
      ok: check.unpriced.length === 0,
      detail: [`price table from ${check.tableAsOf}; ${where}`, ...problems].join('\n'),
      ...(check.unpriced.length === 0
        ? {}
        : {
            fix: `add the price of ${check.unpriced.join(', ')} to [gateway.prices] in ${ctx.paths.configFile}, e.g. "${check.unpriced[0]}" = { input_per_mtok_usd = 1.25, output_per_mtok_usd = 10 }`,
          }),
    };
  };
}
