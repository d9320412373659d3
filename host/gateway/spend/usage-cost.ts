import type { Pricing } from '../config.ts';
import { costMicros, usdToMicros } from './pricing.ts';
import type { PartialUsage } from './usage-extract.ts';

/**
 * What one answered request is charged: the provider's own figure when it gives one (OpenRouter's
 * usage.cost: what it bills, whatever the routing), else the tokens at the model's price; without any usage
 * report the cost is unknown and the reserved worst case is charged, so a provider that stays silent about
 * usage cannot let a group spend past its cap.
 */
export function chargedMicros(
  model: string,
  usage: PartialUsage | undefined,
  reservedMicros: number,
  pricing: Pricing,
): number {
  if (usage === undefined) return reservedMicros;
  if (usage.costUsd !== undefined) return usdToMicros(usage.costUsd);
  return costMicros(
    model,
    { promptTokens: usage.promptTokens ?? 0, completionTokens: usage.completionTokens ?? 0 },
    pricing,
  );
}
