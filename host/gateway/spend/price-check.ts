import type { GatewayConfig, Pricing, ProviderConfig } from '../config.ts';
import { ceilingRates, isTranscriptionListed, PRICES_AS_OF, priceSource, tableRow } from './price-table.ts';

/** A listed price older than this may have changed, and models released since are not in the table. */
export const STALE_PRICE_DAYS = 183;

export interface PriceCheck {
  /** The table's date (its newest row). */
  tableAsOf: string;
  /** The table is more than STALE_PRICE_DAYS old: models released since are charged the ceiling. */
  tableStale: boolean;
  /** Models in use without a price: charged the ceiling, so the cap binds early. */
  unpriced: string[];
  /** Models in use priced by a table row more than STALE_PRICE_DAYS old, with that row's date and page. */
  stale: { model: string; asOf: string; source: string }[];
  ceiling: { input: number; output: number };
}

const DAY_MS = 86_400_000;
const olderThan = (day: string, now: number) =>
  now - Date.parse(`${day}T00:00:00Z`) > STALE_PRICE_DAYS * DAY_MS;

/**
 * The chat models the host may send: the provider's model, its fallbacks and the allowlist, and models with
 * spend in the records (`seen`) except voice models (`transcriptionModel` and the listed ones), which are
 * priced per minute, not per token.
 */
export function modelsInUse(
  config: { provider: ProviderConfig; gateway: Pick<GatewayConfig, 'allowed_models'> },
  seen: readonly string[],
  transcriptionModel: string,
): string[] {
  const chat = seen.filter((m) => m !== transcriptionModel && !isTranscriptionListed(m));
  return [
    ...new Set([
      config.provider.model,
      ...config.provider.fallback_models,
      ...(config.gateway.allowed_models ?? []),
      ...chat,
    ]),
  ];
}

/** What the owner should know about the prices of `models` on `now`'s date. */
export function checkPrices(models: readonly string[], pricing: Pricing, now: number): PriceCheck {
  const stale: PriceCheck['stale'] = [];
  const unpriced: string[] = [];
  for (const model of models) {
    const source = priceSource(model, pricing.prices);
    if (source === 'ceiling') unpriced.push(model);
    const row = source === 'table' ? tableRow(model) : undefined;
    if (row !== undefined && olderThan(row.price.as_of, now))
      stale.push({ model, asOf: row.price.as_of, source: row.price.source });
  }
  const ceiling = ceilingRates(pricing);
  return {
    tableAsOf: PRICES_AS_OF,
    tableStale: olderThan(PRICES_AS_OF, now),
    unpriced,
    stale,
    ceiling: { input: ceiling.input_per_mtok_usd, output: ceiling.output_per_mtok_usd },
  };
}

/** The price problems as short lines for a chat or a terminal; empty when there is nothing to do. */
export function priceCheckLines(check: PriceCheck): string[] {
  const lines: string[] = [];
  if (check.tableStale)
    lines.push(
      `The price table is from ${check.tableAsOf}, more than six months old: models released since are charged ` +
        `the ceiling. Update Carapace, or price them in [gateway.prices].`,
    );
  for (const model of check.unpriced)
    lines.push(
      `${model} has no price: it is charged the ceiling ($${check.ceiling.input} in, $${check.ceiling.output} out ` +
        `per million tokens), so its cap binds early. Set [gateway.prices."${model}"] from its provider's pricing page.`,
    );
  for (const s of check.stale)
    lines.push(
      `The listed price of ${s.model} is from ${s.asOf}, more than six months old: check ${s.source} and set ` +
        `[gateway.prices."${s.model}"] if it changed.`,
    );
  return lines;
}
