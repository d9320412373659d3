import type { ModelPrice, Pricing, Rates } from '../config.ts';

/** A listed price, with the day it was read off `source`, the provider's pricing page. */
export interface ListedPrice extends ModelPrice {
  as_of: string;
  source: string;
}

const OPENAI = 'https://platform.openai.com/docs/pricing';
const ANTHROPIC = 'https://docs.claude.com/en/docs/about-claude/pricing';
const GOOGLE = 'https://ai.google.dev/gemini-api/docs/pricing';

const row = (
  source: string,
  as_of: string,
  input: number,
  output: number,
  long?: { above: number; input: number; output: number },
): ListedPrice => ({
  input_per_mtok_usd: input,
  output_per_mtok_usd: output,
  ...(long === undefined
    ? {}
    : {
        long_context: {
          above_prompt_tokens: long.above,
          input_per_mtok_usd: long.input,
          output_per_mtok_usd: long.output,
        },
      }),
  as_of,
  source,
});
const openai = (as_of: string, input: number, output: number, long?: { input: number; output: number }) =>
  // OpenAI's long-context models charge a prompt of more than 272K tokens 2× input and 1.5× output, whole.
  row(OPENAI, as_of, input, output, long && { above: 272_000, ...long });
const anthropic = (as_of: string, input: number, output: number, long?: { input: number; output: number }) =>
  row(ANTHROPIC, as_of, input, output, long && { above: 200_000, ...long });
const google = (as_of: string, input: number, output: number, long?: { input: number; output: number }) =>
  row(GOOGLE, as_of, input, output, long && { above: 200_000, ...long });

/**
 * USD per million tokens, list prices (standard tier: no batch, flex or cache discounts), keyed by the
 * provider's model name. Google's text input price (audio input is not sent through the gateway).
 */
export const DEFAULT_PRICES: Readonly<Record<string, ListedPrice>> = {
  // OpenAI
  'gpt-5.5-pro': openai('2026-06-01', 30, 180, { input: 60, output: 270 }),
  'gpt-5.5': openai('2026-06-01', 5, 30, { input: 10, output: 45 }),
  'gpt-5.4-pro': openai('2026-03-17', 30, 180, { input: 60, output: 270 }),
  'gpt-5.4': openai('2026-03-17', 2.5, 15, { input: 5, output: 22.5 }),
  'gpt-5.2-pro': openai('2025-12-11', 21, 168),
  'gpt-5.2': openai('2025-12-11', 1.75, 14),
  'gpt-5.1': openai('2025-11-13', 1.25, 10),
  'gpt-5-pro': openai('2025-10-06', 15, 120),
  'gpt-5': openai('2025-10-01', 1.25, 10),
  'gpt-5-mini': openai('2025-10-01', 0.25, 2),
  'gpt-5-nano': openai('2025-10-01', 0.05, 0.4),
  'gpt-4.1': openai('2025-10-01', 2, 8),
  'gpt-4.1-mini': openai('2025-10-01', 0.4, 1.6),
  'gpt-4.1-nano': openai('2025-10-01', 0.1, 0.4),
  'gpt-4o': openai('2025-10-01', 2.5, 10),
  // The first gpt-4o snapshot kept its launch price; matched before the undated name.
  'gpt-4o-2024-05-13': openai('2025-10-01', 5, 15),
  'gpt-4o-mini': openai('2025-10-01', 0.15, 0.6),
  'gpt-4-turbo': openai('2025-10-01', 10, 30),
  'gpt-4': openai('2025-10-01', 30, 60),
  'o1-pro': openai('2025-10-01', 150, 600),
  o1: openai('2025-10-01', 15, 60),
  'o3-pro': openai('2025-10-01', 20, 80),
  o3: openai('2025-10-01', 2, 8),
  'o3-mini': openai('2025-10-01', 1.1, 4.4),
  'o4-mini': openai('2025-10-01', 1.1, 4.4),
  // Anthropic. Above 200K prompt tokens (a 1M context window) Sonnet 4 and 4.5 charge the long-context rates.
  'claude-opus-4-6': anthropic('2026-02-18', 5, 25),
  'claude-sonnet-4-6': anthropic('2026-02-18', 3, 15, { input: 6, output: 22.5 }),
  'claude-opus-4-5': anthropic('2025-11-24', 5, 25),
  'claude-opus-4-1': anthropic('2025-10-01', 15, 75),
  'claude-opus-4': anthropic('2025-10-01', 15, 75),
  'claude-sonnet-4-5': anthropic('2025-10-01', 3, 15, { input: 6, output: 22.5 }),
  'claude-sonnet-4': anthropic('2025-10-01', 3, 15, { input: 6, output: 22.5 }),
  'claude-3-7-sonnet': anthropic('2025-10-01', 3, 15),
  'claude-haiku-4-5': anthropic('2025-10-01', 1, 5),
  'claude-3-5-haiku': anthropic('2025-10-01', 0.8, 4),
  'claude-3-opus': anthropic('2025-10-01', 15, 75),
  'claude-3-haiku': anthropic('2025-10-01', 0.25, 1.25),
  // Google. Pro models charge a prompt of more than 200K tokens the long-context rates.
  'gemini-3.1-pro-preview': google('2026-03-25', 2, 12, { input: 4, output: 18 }),
  'gemini-3-pro-preview': google('2025-11-18', 2, 12, { input: 4, output: 18 }),
  'gemini-2.5-pro': google('2025-10-01', 1.25, 10, { input: 2.5, output: 15 }),
  'gemini-2.5-flash': google('2025-10-01', 0.3, 2.5),
  'gemini-2.5-flash-lite': google('2025-10-01', 0.1, 0.4),
  'gemini-2.0-flash': google('2025-10-01', 0.1, 0.4),
  'gemini-2.0-flash-lite': google('2025-10-01', 0.075, 0.3),
};

/**
 * The table's date: its newest row's. Each row says when its own price was read and where. Prices change and
 * new models appear: `[gateway.prices]` overrides any row, and a model that is not here is charged the
 * ceiling (`ceilingRates`), at least every price known, so a stale or missing row can only make the cap bind
 * early, never lift it. `carapace doctor` and the daily summary say when a price in use is more than six
 * months old, and which models in use have none.
 */
export const PRICES_AS_OF: string = Object.values(DEFAULT_PRICES)
  .map((p) => p.as_of)
  .reduce((a, b) => (a > b ? a : b));

/** A model's name without a router's vendor prefix or variant (`openai/gpt-4o:extended`), lower case. */
function bareName(model: string): string {
  return model
    .toLowerCase()
    .replace(/^.*\//, '')
    .replace(/:.*$/, '')
    .replace(/(\d)\.(\d)/g, '$1-$2');
}

/**
 * The name under which a model is listed: without a router's vendor prefix (OpenRouter's
 * `anthropic/claude-sonnet-4.5`), a dated snapshot suffix (`-2025-04-14`, `-20250929`) or `-latest`, with
 * dots between digits as dashes (`claude-sonnet-4.5` is Anthropic's `claude-sonnet-4-5`).
 */
export function listedName(model: string): string {
  return bareName(model).replace(/-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/, '');
}

// A snapshot with a price of its own (`gpt-4o-2024-05-13`) is found by its full name first; the undated rows
// by their listed name, so a dated snapshot row never prices the undated model.
const BY_BARE: ReadonlyMap<string, string> = new Map(
  Object.keys(DEFAULT_PRICES).map((name) => [bareName(name), name]),
);
const BY_LISTED: ReadonlyMap<string, string> = new Map(
  Object.keys(DEFAULT_PRICES)
    .filter((name) => listedName(name) === bareName(name))
    .map((name) => [listedName(name), name]),
);

/** The table's row for `model`, by its bare name and then its listed name; undefined when it has none. */
export function tableRow(model: string): { name: string; price: ListedPrice } | undefined {
  const name = BY_BARE.get(bareName(model)) ?? BY_LISTED.get(listedName(model));
  return name === undefined ? undefined : { name, price: DEFAULT_PRICES[name] as ListedPrice };
}

/** Where a model's price comes from: the owner's `[gateway.prices]`, the shipped table, or the ceiling. */
export type PriceSource = 'override' | 'table' | 'ceiling';

export function priceSource(model: string, overrides: Pricing['prices']): PriceSource {
  if (Object.hasOwn(overrides, model)) return 'override';
  return tableRow(model) === undefined ? 'ceiling' : 'table';
}

/**
 * The price a request for `model` is charged at: the owner's `[gateway.prices]` entry (exact name), else the
 * shipped table (by listed name), else the ceiling, so an unpriced model is never charged less than any
 * model known.
 */
export function priceFor(model: string, pricing: Pricing): ModelPrice {
  if (Object.hasOwn(pricing.prices, model)) return pricing.prices[model] as ModelPrice;
  return tableRow(model)?.price ?? ceilingRates(pricing);
}

/** Whether a model has a price of its own (else it is charged the ceiling). */
export function isPriced(model: string, overrides: Pricing['prices']): boolean {
  return priceSource(model, overrides) !== 'ceiling';
}

/** Every rate a price charges at: its own and its long-context tier's. */
function tiers(price: ModelPrice): Rates[] {
  return price.long_context === undefined ? [price] : [price, price.long_context];
}

/**
 * What a model without a price is charged: per direction, the dearest rate of any tier of the table, of the
 * owner's `[gateway.prices]` and of `[gateway] unknown_model_price`. So it is at least every price known, at
 * every prompt size, whatever the request's size; the owner can raise it (for a dearer model not yet in the
 * table) but never lower it under a known price.
 */
export function ceilingRates(pricing: Pricing): Rates {
  const all = [
    ...Object.values(DEFAULT_PRICES).flatMap(tiers),
    ...Object.values(pricing.prices).flatMap(tiers),
    ...(pricing.unknown_model_price === undefined ? [] : [pricing.unknown_model_price]),
  ];
  return {
    input_per_mtok_usd: Math.max(...all.map((x) => x.input_per_mtok_usd)),
    output_per_mtok_usd: Math.max(...all.map((x) => x.output_per_mtok_usd)),
  };
}

/** A voice model's list price per minute of audio, with the day it was read and where. */
export interface ListedMinutePrice {
  per_minute_usd: number;
  as_of: string;
  source: string;
}

/** Transcription, USD per minute of audio (OpenAI's estimate per minute for the token-billed models). */
export const TRANSCRIPTION_PRICES: Readonly<Record<string, ListedMinutePrice>> = {
  'whisper-1': { per_minute_usd: 0.006, as_of: '2025-10-01', source: OPENAI },
  'gpt-4o-transcribe': { per_minute_usd: 0.006, as_of: '2025-10-01', source: OPENAI },
  'gpt-4o-mini-transcribe': { per_minute_usd: 0.003, as_of: '2025-10-01', source: OPENAI },
};

/** Whether a voice model has a listed price (the spend report marks the others). */
export function isTranscriptionListed(model: string): boolean {
  return Object.hasOwn(TRANSCRIPTION_PRICES, listedName(model));
}

/**
 * What one minute of `model`'s audio is charged: the owner's `[media.transcription] price_per_minute_usd`
 * when set (the configured model's price, 0 for a free local server), else the table's, else the dearest
 * price in the table, never less than a known one.
 */
export function transcriptionPricePerMinute(model: string, ownerPrice: number | undefined): number {
  if (ownerPrice !== undefined) return ownerPrice;
  const name = listedName(model);
  if (Object.hasOwn(TRANSCRIPTION_PRICES, name))
    return (TRANSCRIPTION_PRICES[name] as ListedMinutePrice).per_minute_usd;
  return Math.max(...Object.values(TRANSCRIPTION_PRICES).map((p) => p.per_minute_usd));
}
