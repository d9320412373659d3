import type { ModelPrice } from './config.ts';

/**
 * The date the list prices below were taken from the providers' pricing pages. Prices change: `[gateway.prices]`
 * overrides any of them, and a model that is not here is charged at the dearest price known (never 0), so a
 * stale or missing entry can only make the cap bind early, never lift it.
 */
export const PRICES_AS_OF = '2025-10-01';

const p = (input: number, output: number): ModelPrice => ({
  input_per_mtok_usd: input,
  output_per_mtok_usd: output,
});

/** USD per million tokens, list prices (no batch or cache discounts), keyed by the provider's model name. */
export const DEFAULT_PRICES: Readonly<Record<string, ModelPrice>> = {
  // OpenAI
  'gpt-5': p(1.25, 10),
  'gpt-5-mini': p(0.25, 2),
  'gpt-5-nano': p(0.05, 0.4),
  'gpt-4.1': p(2, 8),
  'gpt-4.1-mini': p(0.4, 1.6),
  'gpt-4.1-nano': p(0.1, 0.4),
  'gpt-4o': p(2.5, 10),
  'gpt-4o-mini': p(0.15, 0.6),
  o3: p(2, 8),
  'o4-mini': p(1.1, 4.4),
  // Anthropic
  'claude-opus-4-1': p(15, 75),
  'claude-opus-4': p(15, 75),
  'claude-sonnet-4-5': p(3, 15),
  'claude-sonnet-4': p(3, 15),
  'claude-3-7-sonnet': p(3, 15),
  'claude-haiku-4-5': p(1, 5),
  'claude-3-5-haiku': p(0.8, 4),
  // Google (up to 200k prompt tokens)
  'gemini-2.5-pro': p(1.25, 10),
  'gemini-2.5-flash': p(0.3, 2.5),
  'gemini-2.5-flash-lite': p(0.1, 0.4),
};

/**
 * The name under which a model is listed: without a router's vendor prefix (OpenRouter's
 * `anthropic/claude-sonnet-4.5`), a dated snapshot suffix (`-2025-04-14`, `-20250929`) or `-latest`, with
 * dots between digits as dashes (`claude-sonnet-4.5` is Anthropic's `claude-sonnet-4-5`).
 */
export function listedName(model: string): string {
  return model
    .toLowerCase()
    .replace(/^.*\//, '')
    .replace(/:.*$/, '')
    .replace(/-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$/, '')
    .replace(/(\d)\.(\d)/g, '$1-$2');
}

const DOTTED: ReadonlyMap<string, string> = new Map(
  Object.keys(DEFAULT_PRICES).map((name) => [listedName(name), name]),
);

/**
 * The price a request for `model` is charged at: the owner's `[gateway.prices]` entry (exact name), else the
 * shipped table (by listed name), else the dearest input and output price either knows, so an unpriced model
 * never makes the spend cap count nothing.
 */
export function priceFor(model: string, overrides: Readonly<Record<string, ModelPrice>>): ModelPrice {
  if (Object.hasOwn(overrides, model)) return overrides[model] as ModelPrice;
  const listed = DOTTED.get(listedName(model));
  if (listed !== undefined) return DEFAULT_PRICES[listed] as ModelPrice;
  return dearest(overrides);
}

/** Whether a model has a price of its own (else it is charged the dearest one). */
export function isPriced(model: string, overrides: Readonly<Record<string, ModelPrice>>): boolean {
  return Object.hasOwn(overrides, model) || DOTTED.has(listedName(model));
}

function dearest(overrides: Readonly<Record<string, ModelPrice>>): ModelPrice {
  const all = [...Object.values(DEFAULT_PRICES), ...Object.values(overrides)];
  return p(
    Math.max(...all.map((x) => x.input_per_mtok_usd)),
    Math.max(...all.map((x) => x.output_per_mtok_usd)),
  );
}
