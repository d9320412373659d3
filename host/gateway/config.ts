import { z } from 'zod';

const httpUrl = z
  .string()
  .url('must be a URL such as "https://api.openai.com/v1"')
  .refine((value) => /^https?:\/\//i.test(value), 'must start with http:// or https://');

const modelName = z.string().trim().min(1, 'model names must not be empty');

const rates = {
  input_per_mtok_usd: z.number().nonnegative(),
  output_per_mtok_usd: z.number().nonnegative(),
};

const ratesSchema = z.object(rates).strict();

/**
 * A model's price. `long_context`: a prompt of more than `above_prompt_tokens` tokens is charged at its rates,
 * input and output, for the whole request (as Gemini and Anthropic price long prompts).
 */
const priceSchema = z
  .object({
    ...rates,
    long_context: z
      .object({ above_prompt_tokens: z.number().int().positive(), ...rates })
      .strict()
      .optional(),
  })
  .strict();

/** `[gateway]` section of config.toml. Every field has a default so an empty section is valid. */
export const gatewayConfigSchema = z
  .object({
    /** 0 picks a free port at start. */
    port: z.number().int().min(0).max(65_535).default(0),
    max_request_bytes: z
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /** The longest silence between two chunks of a response body (a stream that stalls). */
    upstream_timeout_ms: z.number().int().positive().default(300_000),
    /** The longest one request waits for the provider to start answering (response headers). */
    first_byte_timeout_ms: z.number().int().positive().default(120_000),
    /**
     * The longest one run waits in all in requests the provider never starts answering (each cut at
     * first_byte_timeout_ms): once spent, the run's further requests are refused unsent. Answered requests,
     * however slow, do not count.
     */
    run_first_byte_budget_ms: z.number().int().positive().default(300_000),
    /**
     * A provider that has not answered a request (no response headers) for this long gets its run's group a
     * "still working" note and the owner a notice, once per run; the request itself goes on until
     * `upstream_timeout_ms`. 0 turns the notes off.
     */
    slow_notice_ms: z.number().int().min(0).default(60_000),
    /** Extra attempts per model on 429/5xx/connection errors, before any byte reached the client. */
    retry_attempts: z.number().int().min(0).max(10).default(2),
    retry_base_ms: z.number().int().min(0).default(500),
    /** A retry-after (or backoff) longer than this ends the retries for that model instead of waiting. */
    retry_max_delay_ms: z.number().int().min(0).default(20_000),
    daily_cap_usd: z.number().nonnegative().default(5),
    /** Per-group overrides of `daily_cap_usd`, keyed by group id. */
    group_caps_usd: z.record(z.string(), z.number().nonnegative()).default({}),
    /** Models a container may ask for. Unset: the provider model plus its fallbacks. */
    allowed_models: z.array(modelName).optional(),
    /** USD per million tokens, keyed by the model name sent upstream; over the shipped table (price-table.ts). */
    prices: z.record(z.string(), priceSchema).default({}),
    /**
     * What a model without a price is charged at least. It can only raise the ceiling an unpriced model is
     * charged at (the dearest rate of the table and of `prices`, per direction), never lower it.
     */
    unknown_model_price: ratesSchema.optional(),
  })
  .strict();

export type GatewayConfig = z.output<typeof gatewayConfigSchema>;
export type ModelPrice = z.output<typeof priceSchema>;
/** USD per million tokens, in and out, at one tier. */
export type Rates = z.output<typeof ratesSchema>;
/** What prices a model: the owner's `[gateway.prices]` and `unknown_model_price`, over the shipped table. */
export type Pricing = Pick<GatewayConfig, 'prices' | 'unknown_model_price'>;

export const PROVIDER_DEFAULTS = {
  openai: { base_url: 'https://api.openai.com/v1', api_key_env: 'OPENAI_API_KEY', model: 'gpt-4.1-mini' },
  anthropic: {
    base_url: 'https://api.anthropic.com',
    api_key_env: 'ANTHROPIC_API_KEY',
    model: 'claude-sonnet-4-5',
  },
} as const;

/**
 * `[provider]` section. The defaults of base_url, api_key_env and model depend on `kind`, so they are
 * filled in after parsing; the output type has them all set.
 */
export const providerConfigSchema = z
  .object({
    kind: z.enum(['openai', 'anthropic']).default('openai'),
    base_url: httpUrl.optional(),
    api_key_env: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name such as OPENAI_API_KEY')
      .optional(),
    model: modelName.optional(),
    fallback_models: z.array(modelName).default([]),
  })
  .strict()
  .transform((provider) => {
    const defaults = PROVIDER_DEFAULTS[provider.kind];
    return {
      kind: provider.kind,
      base_url: provider.base_url ?? defaults.base_url,
      api_key_env: provider.api_key_env ?? defaults.api_key_env,
      model: provider.model ?? defaults.model,
      fallback_models: provider.fallback_models,
    };
  });

export type ProviderConfig = z.output<typeof providerConfigSchema>;
export type ProviderKind = ProviderConfig['kind'];

/** The models a container may request: the configured allowlist, always including the gateway's own chain. */
export function allowedModels(gateway: GatewayConfig, provider: ProviderConfig): ReadonlySet<string> {
  return new Set([...(gateway.allowed_models ?? []), provider.model, ...provider.fallback_models]);
}

/**
 * The URL prefix that the `/v1/...` routes are appended to (without the `/v1`): OpenAI-style base URLs
 * already end in `/v1` (or `/api/v1`), Anthropic's is the bare origin.
 */
export function upstreamApiBase(provider: ProviderConfig): string {
  const trimmed = provider.base_url.replace(/\/+$/, '');
  if (provider.kind === 'anthropic' && !/\/v1$/.test(trimmed)) return `${trimmed}/v1`;
  return trimmed;
}
