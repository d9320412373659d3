import { z } from 'zod';
import type { GatewayConfig, ProviderConfig } from '../config.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { upstreamRequestHeaders } from '../proxy/headers.ts';
import type { LogLevels } from '../../logging/logger.ts';
import { worstCaseMicros } from '../spend/pricing.ts';
import { readUpstreamBody } from '../proxy/response-relay.ts';
import { reviewRunId } from '../spend/review-run-id.ts';
import type { SpendCap } from '../spend/spend-cap.ts';
import { callUpstream, type UpstreamSettings } from '../proxy/upstream.ts';
import { chargedMicros } from '../spend/usage-cost.ts';
import { usageFromPayload, type PartialUsage } from '../spend/usage-extract.ts';
import type { UsageStore } from '../spend/usage-store.ts';

/** `[security.cop]` as the gateway reads it (the section is the Cop's; see cop.ts), taken once at start. */
export interface ReviewSettings {
  /** `[security.cop] model`, else `[provider] model`. */
  model: string;
  /** The answer's bound; clamped to the gateway's own per-call bound (`[runs] max_output_tokens`). */
  max_output_tokens: number;
  max_reviews_per_run: number;
}

export interface ReviewCall {
  /** The run whose operation is reviewed: it pays (its group's cap) and it has the review budget. */
  runId: string;
  groupId: string;
  messages: readonly { role: 'system' | 'user'; content: string }[];
  /** The Cop's own deadline: aborting it ends the call (and charges the reservation). */
  signal: AbortSignal;
}

export type ReviewResult =
  | { ok: true; text: string }
  /** Not sent: the group's cap or the run's review budget. The words are for the owner. */
  | { ok: false; refused: string }
  /** Sent, and no usable answer came back. */
  | { ok: false; failed: string };

export interface ReviewDeps {
  settings: ReviewSettings;
  /** Read at each review, like a request's: a reloaded price applies to the next one. */
  config: () => Pick<GatewayConfig, 'prices' | 'unknown_model_price' | 'first_byte_timeout_ms'>;
  provider: Pick<ProviderConfig, 'kind' | 'fallback_models'>;
  providerApiKey: string;
  /** `[runs] max_output_tokens`: no call the gateway makes asks for more. */
  maxOutputTokens: number;
  upstream: UpstreamSettings;
  spendCap: Pick<SpendCap, 'reserve' | 'message'>;
  usageStore: Pick<UsageStore, 'recordUsage'>;
  day: () => string;
  logger: LogLevels;
}

export interface Reviews {
  review(call: ReviewCall): Promise<ReviewResult>;
  /** The run ended (its keys were revoked): its review count is dropped. */
  forget(runId: string): void;
}

/** The one part of a chat completion a review needs; anything else in the answer is ignored. */
const answerSchema = z.looseObject({
  choices: z
    .array(z.looseObject({ message: z.looseObject({ content: z.string().nullable().optional() }) }))
    .min(1),
});

/** A verdict is one short JSON object; a provider that sends more than this is not answering the question. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * The Cop's calls, made by the gateway like a run's own (DESIGN, "LLM gateway"): one place spends. A review
 * counts against the run's review budget (`max_reviews_per_run`, so one model answer with many tool calls
 * cannot buy reviews without end) and reserves its worst case (every byte of the body as a prompt token plus
 * the clamped answer bound, at the dearest price of the fallback chain) against the group's cap before
 * anything is sent; it settles at the usage the provider reports, at the reservation when the provider may
 * have worked without saying (a timeout, an abort, an unreadable answer), and at nothing when it refused.
 * Its usage row is `review:<group>:<run>`. A refusal sends nothing and says why: the Cop makes it a flag,
 * so the operation goes to the owner. The real key goes only to the provider's base URL.
 */
export function createReviews(deps: ReviewDeps): Reviews {
  const { model, max_reviews_per_run: budget } = deps.settings;
  const bound = Math.min(deps.settings.max_output_tokens, deps.maxOutputTokens);
  const chain = [model, ...deps.provider.fallback_models.filter((m) => m !== model)];
  const headers = upstreamRequestHeaders(
    { 'content-type': 'application/json', accept: 'application/json' },
    { kind: deps.provider.kind, apiKey: deps.providerApiKey, anthropicAuth: 'bearer' },
  );
  // Reviews asked per live run; a run's entry goes with its keys.
  const asked = new Map<string, number>();

  const send = async (
    call: ReviewCall,
    body: Record<string, unknown>,
  ): Promise<{ result: ReviewResult; billed: 'nothing' | 'worst' | PartialUsage; model: string }> => {
    const outcome = await callUpstream(deps.upstream, {
      method: 'POST',
      suffix: '/chat/completions',
      headers,
      body,
      models: chain,
      signal: call.signal,
      firstByteTimeoutMs: deps.config().first_byte_timeout_ms,
    });
    switch (outcome.kind) {
      case 'aborted':
        return { result: { ok: false, failed: 'the review was stopped' }, billed: 'worst', model };
      case 'timeout':
        return {
          result: {
            ok: false,
            failed: 'the provider did not start answering ([gateway] first_byte_timeout_ms)',
          },
          billed: 'worst',
          model,
        };
      case 'unreachable':
        return { result: { ok: false, failed: outcome.reason }, billed: 'nothing', model };
      case 'response':
        break;
    }
    const answered = outcome.model ?? model;
    if (outcome.status < 200 || outcome.status >= 300) {
      await readUpstreamBody(outcome.body, 64 * 1024).catch(() => undefined);
      return {
        result: { ok: false, failed: `the provider answered HTTP ${outcome.status}` },
        billed: 'nothing',
        model: answered,
      };
    }
    const raw = await readUpstreamBody(outcome.body, MAX_ANSWER_BYTES).catch(() => undefined);
    let json: unknown;
    try {
      json = raw === undefined ? undefined : JSON.parse(raw.toString('utf8'));
    } catch {
      json = undefined;
    }
    const usage = usageFromPayload(json);
    const billed = usage ?? 'worst';
    const parsed = answerSchema.safeParse(json);
    const text = parsed.success ? parsed.data.choices[0]?.message.content : undefined;
    if (typeof text !== 'string')
      return {
        result: { ok: false, failed: 'the provider returned no text content' },
        billed,
        model: answered,
      };
    return { result: { ok: true, text }, billed, model: answered };
  };

  return {
    async review(call) {
      // Counted before anything is awaited, so parallel reviews of one run cannot all pass the check.
      const before = asked.get(call.runId) ?? 0;
      if (before >= budget)
        return {
          ok: false,
          refused: `this run has had its ${budget} Cop reviews ([security.cop] max_reviews_per_run)`,
        };
      asked.set(call.runId, before + 1);

      const day = deps.day();
      const body = { model, messages: call.messages, max_completion_tokens: bound };
      const pricing = deps.config();
      const worst = worstCaseMicros(chain, Buffer.byteLength(JSON.stringify(body)), bound, pricing);
      const reserved = await deps.spendCap.reserve(call.groupId, day, worst);
      if (!reserved.ok) return { ok: false, refused: deps.spendCap.message(call.groupId, reserved.capUsd) };

      let billed: 'nothing' | 'worst' | PartialUsage = 'worst';
      let answered = model;
      try {
        const sent = await send(call, body);
        billed = sent.billed;
        answered = sent.model;
        return sent.result;
      } catch (err) {
        deps.logger.warn(
          { runId: call.runId, groupId: call.groupId, err: errorMessage(err) },
          'gateway: review failed',
        );
        return { ok: false, failed: errorMessage(err) };
      } finally {
        const cost =
          billed === 'nothing'
            ? 0
            : chargedMicros(answered, billed === 'worst' ? undefined : billed, worst, pricing);
        await reserved.reservation
          .settle(async () => {
            if (billed === 'nothing') return 0;
            await deps.usageStore.recordUsage({
              runId: reviewRunId(call.groupId, call.runId),
              groupId: call.groupId,
              day,
              model: answered,
              promptTokens: billed === 'worst' ? 0 : (billed.promptTokens ?? 0),
              completionTokens: billed === 'worst' ? 0 : (billed.completionTokens ?? 0),
              costMicros: cost,
            });
            return cost;
          })
          .catch((err: unknown) =>
            deps.logger.error(
              { runId: call.runId, groupId: call.groupId, model: answered, err: errorMessage(err) },
              'gateway: recording a review failed',
            ),
          );
        deps.logger.info(
          { runId: call.runId, groupId: call.groupId, model: answered, costMicros: cost },
          'gateway: review done',
        );
      }
    },
    forget(runId) {
      asked.delete(runId);
    },
  };
}

export type Review = Reviews['review'];
