import type { ModelPrice, Pricing, Rates } from '../config.ts';
import { priceFor } from './price-table.ts';

export interface TokenCounts {
  promptTokens: number;
  completionTokens: number;
}

/** The rates a request with `promptTokens` is charged at: its long-context tier's once the prompt is past it. */
export function ratesAt(price: ModelPrice, promptTokens: number): Rates {
  const long = price.long_context;
  return long !== undefined && promptTokens > long.above_prompt_tokens ? long : price;
}

function priceMicros(price: ModelPrice, tokens: TokenCounts): number {
  const rates = ratesAt(price, tokens.promptTokens);
  return Math.round(
    tokens.promptTokens * rates.input_per_mtok_usd + tokens.completionTokens * rates.output_per_mtok_usd,
  );
}

/**
 * Cost in integer micro-dollars. A price is USD per million tokens, so tokens × price is already in
 * micro-dollars. The owner's `[gateway.prices]` go over the shipped table (`price-table.ts`); a model
 * neither knows costs the ceiling, at least every known price, never 0 (a local model is free only when the
 * owner says so with a price of 0).
 */
export function costMicros(model: string, tokens: TokenCounts, pricing: Pricing): number {
  return priceMicros(priceFor(model, pricing), tokens);
}

export function usdToMicros(usd: number): number {
  return Math.round(usd * 1_000_000);
}

/** Micro-dollars as dollars with four decimals ("$0.0042"): readable, and a cent is never rounded away. */
export function formatUsd(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / 1_000_000);
  const frac = Math.round((abs % 1_000_000) / 100);
  // 0.99995 and up rounds into the next dollar.
  return frac === 10_000 ? `${sign}$${whole + 1}.0000` : `${sign}$${whole}.${String(frac).padStart(4, '0')}`;
}

/**
 * The most a request can cost before it is sent: every prompt byte counted as a token (a byte-level
 * tokenizer never makes a token of less than one byte) plus the full output bound, at the dearest price
 * of the models it may fall back to. A prompt that may be past a model's long-context threshold is counted
 * at that tier; one that may fall short of it at the tier below (the dearer of the two), so the bound holds
 * whatever the tiers' rates.
 */
export function worstCaseMicros(
  models: readonly string[],
  promptBytes: number,
  maxOutputTokens: number,
  pricing: Pricing,
): number {
  let worst = 0;
  for (const model of models) {
    const price = priceFor(model, pricing);
    const threshold = price.long_context?.above_prompt_tokens;
    // Within one tier the cost grows with the prompt, so each tier is dearest at its longest reachable prompt.
    const prompts =
      threshold !== undefined && threshold < promptBytes ? [threshold, promptBytes] : [promptBytes];
    for (const promptTokens of prompts)
      worst = Math.max(worst, priceMicros(price, { promptTokens, completionTokens: maxOutputTokens }));
  }
  return worst;
}
