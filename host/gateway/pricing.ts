import type { ModelPrice } from './config.ts';
import { priceFor } from './price-table.ts';

export interface TokenCounts {
  promptTokens: number;
  completionTokens: number;
}

/**
 * Cost in integer micro-dollars. A price is USD per million tokens, so tokens × price is already in
 * micro-dollars. `prices` are the owner's `[gateway.prices]`, over the shipped table (`price-table.ts`); a
 * model neither knows costs the dearest known price, never 0 (a local model is free only when the owner
 * says so with a price of 0).
 */
export function costMicros(
  model: string,
  tokens: TokenCounts,
  prices: Readonly<Record<string, ModelPrice>>,
): number {
  const price = priceFor(model, prices);
  return Math.round(
    tokens.promptTokens * price.input_per_mtok_usd + tokens.completionTokens * price.output_per_mtok_usd,
  );
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
 * of the models it may fall back to.
 */
export function worstCaseMicros(
  models: readonly string[],
  promptBytes: number,
  maxOutputTokens: number,
  prices: Readonly<Record<string, ModelPrice>>,
): number {
  let worst = 0;
  for (const model of models) {
    worst = Math.max(
      worst,
      costMicros(model, { promptTokens: promptBytes, completionTokens: maxOutputTokens }, prices),
    );
  }
  return worst;
}
