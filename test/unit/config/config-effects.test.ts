import { describe, expect, it } from 'vitest';
import { configEffects } from '../../../host/config/config-effects.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';

const config = (gateway: Record<string, unknown>) =>
  hostConfigSchema.parse({ provider: { fallback_models: ['brand-new-model'] }, gateway });

describe('config effects of the price of a model without one', () => {
  it('finds nothing in an unknown_model_price under the ceiling: it cannot lower what an unpriced model is counted at', () => {
    const after = config({ unknown_model_price: { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } });
    expect(configEffects(config({}), after)).toEqual([]);
  });

  it('puts a lowered unknown_model_price to the owner when it lowers what a usable unpriced model is counted at', () => {
    const before = config({ unknown_model_price: { input_per_mtok_usd: 1000, output_per_mtok_usd: 1000 } });
    expect(configEffects(before, config({}))).toEqual([
      {
        key: 'gateway.unknown_model_price',
        effect:
          'lowers the price counted for model brand-new-model (input 1000 USD → 150 USD, output 1000 USD → 600 USD per million tokens): the spend cap then allows more of it',
        verdict: 'ask',
      },
    ]);
  });
});
