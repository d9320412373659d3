import { describe, expect, it } from 'vitest';
import { gatewayConfigSchema, type ModelPrice, type Pricing } from '../../../host/gateway/config.ts';
import {
  ceilingRates,
  DEFAULT_PRICES,
  PRICES_AS_OF,
  priceFor,
  priceSource,
  TRANSCRIPTION_PRICES,
  transcriptionPricePerMinute,
} from '../../../host/gateway/spend/price-table.ts';
import { costMicros, ratesAt, worstCaseMicros } from '../../../host/gateway/spend/pricing.ts';

const none: Pricing = { prices: {} };

/**
 * What a request costs at list price, written from the rule the providers state rather than through the
 * gateway's code: a prompt past the threshold makes every token of the request, in and out, cost the
 * long-context rates.
 */
function listPriceMicros(price: ModelPrice, promptTokens: number, completionTokens: number): number {
  const long = price.long_context;
  const rates = long !== undefined && promptTokens > long.above_prompt_tokens ? long : price;
  return promptTokens * rates.input_per_mtok_usd + completionTokens * rates.output_per_mtok_usd;
}

describe('the price table', () => {
  it('dates and sources every row, none after the table date, and every rate is a number', () => {
    for (const [model, row] of Object.entries(DEFAULT_PRICES)) {
      expect(row.as_of, model).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(row.as_of <= PRICES_AS_OF, model).toBe(true);
      expect(row.source, model).toMatch(/^https:\/\//);
      // The row passes the owner's own schema: a shipped price is one an owner could write.
      const { as_of: _date, source: _source, ...price } = row;
      expect(() => gatewayConfigSchema.parse({ prices: { [model]: price } }), model).not.toThrow();
    }
    for (const row of Object.values(TRANSCRIPTION_PRICES)) expect(row.source).toMatch(/^https:\/\//);
  });

  it('lists the pro models dearer than the old fallback, and a dated snapshot with a price of its own', () => {
    expect(priceFor('o1-pro', none)).toMatchObject({ input_per_mtok_usd: 150, output_per_mtok_usd: 600 });
    expect(priceFor('gpt-5.5-pro', none)).toMatchObject({ input_per_mtok_usd: 30, output_per_mtok_usd: 180 });
    expect(priceFor('openai/o3-pro-2025-06-10', none)).toMatchObject({ input_per_mtok_usd: 20 });
    // gpt-4o's first snapshot kept its launch price; the undated name and later snapshots did not.
    expect(priceFor('gpt-4o-2024-05-13', none)).toMatchObject({ input_per_mtok_usd: 5 });
    expect(priceFor('gpt-4o', none)).toMatchObject({ input_per_mtok_usd: 2.5 });
    expect(priceFor('gpt-4o-2024-08-06', none)).toMatchObject({ input_per_mtok_usd: 2.5 });
  });

  it("names where a model's price comes from", () => {
    const pricing = { prices: { 'my-llama': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } } };
    expect(priceSource('my-llama', pricing.prices)).toBe('override');
    expect(priceSource('anthropic/claude-sonnet-4.5', pricing.prices)).toBe('table');
    expect(priceSource('gpt-9-turbo', pricing.prices)).toBe('ceiling');
  });
});

describe('the ceiling an unpriced model is charged', () => {
  it('is the dearest rate of every tier of the table, per direction', () => {
    const all = Object.values(DEFAULT_PRICES).flatMap((p) => [
      p,
      ...(p.long_context ? [p.long_context] : []),
    ]);
    expect(ceilingRates(none)).toEqual({
      input_per_mtok_usd: Math.max(...all.map((p) => p.input_per_mtok_usd)),
      output_per_mtok_usd: Math.max(...all.map((p) => p.output_per_mtok_usd)),
    });
  });

  it("is raised by a dearer override, tier or unknown_model_price, and never lowered by the owner's", () => {
    const base = ceilingRates(none);
    expect(
      ceilingRates({
        prices: {
          'x-long': {
            input_per_mtok_usd: 1,
            output_per_mtok_usd: 1,
            long_context: { above_prompt_tokens: 10, input_per_mtok_usd: 400, output_per_mtok_usd: 1 },
          },
        },
      }),
    ).toEqual({ ...base, input_per_mtok_usd: 400 });
    expect(
      ceilingRates({ prices: {}, unknown_model_price: { input_per_mtok_usd: 1, output_per_mtok_usd: 900 } }),
    ).toEqual({ ...base, output_per_mtok_usd: 900 });
    expect(
      ceilingRates({ prices: {}, unknown_model_price: { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } }),
    ).toEqual(base);
  });
});

describe('long-context tiers', () => {
  it('charge a prompt past the threshold the higher rates for the whole request, in and out', () => {
    // Gemini 2.5 Pro: $1.25/$10 up to 200K prompt tokens, $2.50/$15 above.
    expect(costMicros('gemini-2.5-pro', { promptTokens: 200_000, completionTokens: 1000 }, none)).toBe(
      200_000 * 1.25 + 1000 * 10,
    );
    expect(costMicros('gemini-2.5-pro', { promptTokens: 200_001, completionTokens: 1000 }, none)).toBe(
      Math.round(200_001 * 2.5 + 1000 * 15),
    );
    // Claude Sonnet 4.5 (under a router's name): $3/$15, above 200K $6/$22.50.
    expect(
      costMicros('anthropic/claude-sonnet-4.5', { promptTokens: 300_000, completionTokens: 2000 }, none),
    ).toBe(300_000 * 6 + 2000 * 22.5);
  });

  it('reserve at the higher tier a request whose prompt could pass the threshold, the lower one otherwise', () => {
    // 150K bytes cannot be more than 150K tokens: the lower tier is the worst case.
    expect(worstCaseMicros(['gemini-2.5-pro'], 150_000, 4096, none)).toBe(150_000 * 1.25 + 4096 * 10);
    // 250K bytes may be 250K tokens: the higher tier.
    expect(worstCaseMicros(['gemini-2.5-pro'], 250_000, 4096, none)).toBe(250_000 * 2.5 + 4096 * 15);
  });

  it('reserve the dearer tier even when an owner made the long tier the cheaper one', () => {
    const pricing = {
      prices: {
        odd: {
          input_per_mtok_usd: 10,
          output_per_mtok_usd: 10,
          long_context: { above_prompt_tokens: 100, input_per_mtok_usd: 1, output_per_mtok_usd: 1 },
        },
      },
    };
    // 1000 bytes: at most 100 tokens at $10 (the short tier) beats 1000 at $1.
    expect(worstCaseMicros(['odd'], 1000, 50, pricing)).toBe(100 * 10 + 50 * 10);
    expect(ratesAt(pricing.prices.odd, 101)).toEqual(pricing.prices.odd.long_context);
  });
});

describe('transcription prices', () => {
  it("are the owner's, else the table's, else the dearest listed", () => {
    expect(transcriptionPricePerMinute('whisper-1', undefined)).toBe(0.006);
    expect(transcriptionPricePerMinute('gpt-4o-mini-transcribe', undefined)).toBe(0.003);
    expect(transcriptionPricePerMinute('gpt-4o-mini-transcribe-2025-12-15', undefined)).toBe(0.003);
    expect(transcriptionPricePerMinute('constructor', undefined)).toBe(0.006);
    expect(transcriptionPricePerMinute('whisper-1', 0)).toBe(0);
  });
});

describe('property: the reservation is an upper bound of the list price', () => {
  // Overrides that cover what an owner can write: flat, tiered, free, a tier below its base, and dearer
  // than everything listed (so the ceiling moves).
  const overrides: Record<string, ModelPrice> = {
    'local-free': { input_per_mtok_usd: 0, output_per_mtok_usd: 0 },
    'own-flat': { input_per_mtok_usd: 7, output_per_mtok_usd: 21 },
    'own-tiered': {
      input_per_mtok_usd: 2,
      output_per_mtok_usd: 8,
      long_context: { above_prompt_tokens: 64_000, input_per_mtok_usd: 4, output_per_mtok_usd: 12 },
    },
    'own-cheaper-long': {
      input_per_mtok_usd: 9,
      output_per_mtok_usd: 9,
      long_context: { above_prompt_tokens: 1000, input_per_mtok_usd: 3, output_per_mtok_usd: 3 },
    },
    'own-dearest': { input_per_mtok_usd: 500, output_per_mtok_usd: 700 },
  };
  const pricings: Pricing[] = [
    none,
    { prices: overrides },
    { prices: overrides, unknown_model_price: { input_per_mtok_usd: 900, output_per_mtok_usd: 50 } },
    { prices: {}, unknown_model_price: { input_per_mtok_usd: 0.01, output_per_mtok_usd: 0.01 } },
  ];
  // Every table row, every override, names the table matches only after normalising, and unknown models.
  const models = [
    ...Object.keys(DEFAULT_PRICES),
    ...Object.keys(overrides),
    'openai/gpt-5.5-pro',
    'google/gemini-2.5-pro',
    'claude-sonnet-4-5-20250929',
    'gpt-9-ultra',
    'local-llama',
    'constructor',
  ];
  // Every threshold in play, each side of it, and sizes between.
  const thresholds = [...Object.values(DEFAULT_PRICES), ...Object.values(overrides)].flatMap((p) =>
    p.long_context ? [p.long_context.above_prompt_tokens] : [],
  );
  const promptBytes = [
    ...new Set([
      0,
      1,
      999,
      1000,
      1001,
      50_000,
      2_000_000,
      ...thresholds.flatMap((t) => [t - 1, t, t + 1, t * 2]),
    ]),
  ];
  const outputs = [0, 1, 4096, 128_000];

  it('holds for every model, prompt size across every threshold, token count up to the bytes, and output bound', () => {
    let checked = 0;
    for (const pricing of pricings) {
      for (const model of models) {
        // The truth a request is billed at: its owner's price, its listed row, or for an unknown model the
        // dearest price any model known to the host charges at that size (what it could turn out to be).
        const truths: ModelPrice[] = Object.hasOwn(pricing.prices, model)
          ? [pricing.prices[model] as ModelPrice]
          : priceSource(model, pricing.prices) === 'table'
            ? [priceFor(model, none)]
            : [...Object.values(DEFAULT_PRICES), ...Object.values(pricing.prices)];
        for (const bytes of promptBytes) {
          // Tokens never exceed bytes: each size up to the bytes, including just past each threshold.
          const tokenCounts = [
            ...new Set([0, bytes, ...thresholds.flatMap((t) => [t, t + 1]).filter((t) => t <= bytes)]),
          ];
          for (const maxOutput of outputs) {
            const reserved = worstCaseMicros([model], bytes, maxOutput, pricing);
            for (const tokens of tokenCounts) {
              for (const truth of truths) {
                const list = listPriceMicros(truth, tokens, maxOutput);
                if (reserved < Math.round(list))
                  throw new Error(
                    `${model} with ${bytes} prompt bytes (${tokens} tokens) and ${maxOutput} output reserved ${reserved} µ$ but lists at ${list} µ$`,
                  );
                checked++;
              }
            }
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100_000);
  });

  it('and a whole fallback chain reserves at least its dearest model', () => {
    for (const bytes of promptBytes) {
      const chain = ['gpt-4.1-mini', 'gemini-2.5-pro', 'o1-pro'];
      const alone = chain.map((m) => worstCaseMicros([m], bytes, 4096, none));
      expect(worstCaseMicros(chain, bytes, 4096, none)).toBe(Math.max(...alone));
    }
  });
});
