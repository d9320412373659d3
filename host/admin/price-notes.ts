import type { GatewayConfig, ProviderConfig } from '../gateway/config.ts';
import { checkPrices, modelsInUse, priceCheckLines } from '../gateway/spend/price-check.ts';
import type { SpendView } from './spend-view.ts';

export interface PriceNotesDeps {
  spend: Pick<SpendView, 'report'>;
  /** Read at each summary: the models and prices running now. */
  config(): { provider: ProviderConfig; gateway: GatewayConfig; media: { transcription: { model: string } } };
  now(): number;
}

/**
 * The daily summary's price lines: the models in use (configured, or with spend in the last 7 days) that have
 * no price, listed prices and a table more than six months old. Empty when there is nothing to do.
 */
export function createPriceNotes(deps: PriceNotesDeps): () => string[] {
  return () => {
    const config = deps.config();
    const seen = deps.spend.report({ days: 7, topRuns: 0 }).models.map((m) => m.model);
    const models = modelsInUse(config, seen, config.media.transcription.model);
    const lines = priceCheckLines(checkPrices(models, config.gateway, deps.now()));
    return lines.length === 0 ? [] : ['', 'Prices:', ...lines.map((line) => `- ${line}`)];
  };
}
