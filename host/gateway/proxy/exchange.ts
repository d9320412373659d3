import type { IncomingMessage, ServerResponse } from 'node:http';
import { gatewayErrors, sendError } from './errors.ts';
import { upstreamRequestHeaders } from './headers.ts';
import type { KeyOwner } from '../key-registry.ts';
import { filterModelList, readUpstreamBody, relayStream, sendBuffered } from './response-relay.ts';
import { isRetryableStatus } from './retry-policy.ts';
import type { Route } from './routes.ts';
import type { Reservation } from '../spend/spend-cap.ts';
import { callUpstream, type UpstreamOutcome } from './upstream.ts';
import { settleCharge, tellHost, type HandlerContext } from './handler-context.ts';

/** One admitted request on its way: what the relay needs to answer it and to bill it. */
export interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  route: Route;
  query: string;
  owner: KeyOwner;
  started: number;
  day: string;
  controller: AbortController;
}

/** What the admission made of the request: the body to send and the spend held for it. */
export interface PreparedCall {
  body: Record<string, unknown> | undefined;
  model: string | undefined;
  stripUsageOnlyChunks: boolean;
  reservation: Reservation | undefined;
}

type Answer = Extract<UpstreamOutcome, { kind: 'response' }>;

function redact(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}

/** The model chain a request may be answered by: its model, then the provider's fallbacks. */
export function chainFor(ctx: HandlerContext, model: string): string[] {
  return [model, ...ctx.provider.fallback_models.filter((fallback) => fallback !== model)];
}

/**
 * The provider's side of an admitted request: the call upstream under the run's first-byte budget (with the
 * slow notice while it waits), then the answer relayed to the container and its usage charged.
 */
export function createExchange(ctx: HandlerContext) {
  // What each run has waited in requests the provider never started answering (timeouts) so far; answered
  // requests, however slow, never count, so a long healthy run is not cut. Keyed by the key's owner, so it
  // goes with the key.
  const firstByteWaits = new WeakMap<KeyOwner, number>();
  /** This request's first-byte deadline: the per-request one, or what is left of the run's budget if less. */
  const firstByteDeadline = (owner: KeyOwner): { ms: number; message: string } => {
    const config = ctx.config();
    const left = config.run_first_byte_budget_ms - (firstByteWaits.get(owner) ?? 0);
    const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;
    return left < config.first_byte_timeout_ms
      ? {
          ms: left,
          message: `the LLM provider kept this run waiting ${seconds(config.run_first_byte_budget_ms)} in all without answering ([gateway] run_first_byte_budget_ms)`,
        }
      : {
          ms: config.first_byte_timeout_ms,
          message: `the LLM provider did not start answering within ${seconds(config.first_byte_timeout_ms)} ([gateway] first_byte_timeout_ms)`,
        };
  };

  return async (exchange: Exchange, request: PreparedCall): Promise<void> => {
    const { req, res, route, query, owner, started, controller } = exchange;
    const dialect = route.dialect;
    const { body, model, reservation } = request;
    const models = model === undefined ? [] : chainFor(ctx, model);
    const notify = (what: string, call: () => void): void => tellHost(ctx, owner, what, call);
    const deadline = firstByteDeadline(owner);
    if (route.billable && deadline.ms <= 0) {
      await reservation?.settle(() => 0);
      notify('providerTimedOut', () => ctx.events.providerTimedOut(owner, deadline.message));
      sendError(res, dialect, gatewayErrors.timeout(deadline.message));
      return;
    }
    const waitStarted = ctx.clock.now();
    // Only the wait for the first answer: a stream that has started shows the group the run is alive.
    const slowAfter = ctx.config().slow_notice_ms;
    const cancelSlow =
      route.billable && slowAfter > 0
        ? ctx.clock.setTimer(() => notify('slow', () => ctx.events.slow(owner, slowAfter)), slowAfter)
        : undefined;
    const outcome = await callUpstream(ctx.upstream, {
      method: route.method,
      suffix: route.suffix + query,
      headers: upstreamRequestHeaders(req.headers, {
        kind: ctx.provider.kind,
        apiKey: ctx.providerApiKey,
        anthropicAuth: route.anthropicAuth,
      }),
      body,
      models,
      signal: controller.signal,
      firstByteTimeoutMs: deadline.ms,
    }).finally(() => cancelSlow?.());
    if (route.billable && outcome.kind === 'timeout')
      firstByteWaits.set(owner, (firstByteWaits.get(owner) ?? 0) + ctx.clock.now() - waitStarted);

    const base = { runId: owner.runId, groupId: owner.groupId, route: route.path };
    switch (outcome.kind) {
      case 'aborted':
        ctx.logger.info(
          { ...base, model, ms: ctx.clock.now() - started },
          'gateway: client went away before the provider answered',
        );
        return;
      case 'timeout':
        ctx.logger.warn({ ...base, model, timeoutMs: deadline.ms }, 'gateway: upstream timeout');
        notify('providerTimedOut', () => ctx.events.providerTimedOut(owner, deadline.message));
        sendError(res, dialect, gatewayErrors.timeout(deadline.message));
        return;
      case 'unreachable':
        await reservation?.settle(() => 0);
        ctx.logger.error(
          { ...base, model: outcome.model, reason: outcome.reason },
          'gateway: provider unreachable',
        );
        sendError(res, dialect, gatewayErrors.unreachable(outcome.reason));
        return;
      case 'response':
        break;
    }

    if (outcome.status === 401) {
      await reservation?.settle(() => 0);
      await readUpstreamBody(outcome.body, 64 * 1024).catch(() => undefined);
      ctx.logger.error({ ...base, status: outcome.status }, 'gateway: provider rejected the host API key');
      notify('authRejected', () => ctx.events.authRejected(owner, outcome.status));
      sendError(res, dialect, gatewayErrors.upstreamAuth(outcome.status));
      return;
    }
    if (outcome.status < 200 || outcome.status >= 300 || route.filterModelList)
      await answerBuffered(ctx, exchange, outcome, reservation);
    else await answerStreamed(ctx, exchange, outcome, request);
  };
}

/** A provider error or the model list: read whole, the host's key redacted (the list filtered), sent at once. */
async function answerBuffered(
  ctx: HandlerContext,
  { res, route, owner, controller }: Exchange,
  outcome: Answer,
  reservation: Reservation | undefined,
): Promise<void> {
  // A provider error is not billed.
  await reservation?.settle(() => 0);
  const buffered = await readUpstreamBody(outcome.body).catch(() => undefined);
  if (buffered === undefined) {
    if (!controller.signal.aborted)
      sendError(
        res,
        route.dialect,
        gatewayErrors.unreachable('the provider sent an unreadable or oversized response'),
      );
    return;
  }
  const ok = outcome.status >= 200 && outcome.status < 300;
  const filtered = ok && route.filterModelList ? filterModelList(buffered, ctx.allowedModels()) : undefined;
  const text = filtered ?? redact(buffered.toString('utf8'), ctx.providerApiKey);
  const extra: Record<string, string> =
    outcome.exhaustedRetries && isRetryableStatus(outcome.status) ? { 'x-should-retry': 'false' } : {};
  if (filtered !== undefined) extra['content-type'] = 'application/json';
  if (!ok)
    ctx.logger.warn(
      {
        runId: owner.runId,
        groupId: owner.groupId,
        route: route.path,
        model: outcome.model,
        status: outcome.status,
      },
      'gateway: provider returned an error',
    );
  sendBuffered(res, outcome.status, outcome.headers, text, extra);
}

/** A model's answer: streamed to the container as it comes, then charged with the usage it reported. */
async function answerStreamed(
  ctx: HandlerContext,
  { res, route, owner, started, day, controller }: Exchange,
  outcome: Answer,
  { stripUsageOnlyChunks, reservation }: PreparedCall,
): Promise<void> {
  const base = { runId: owner.runId, groupId: owner.groupId, route: route.path };
  const model = outcome.model;
  const relay = await relayStream(res, outcome, {
    stripUsageOnlyChunks,
    signal: controller.signal,
    settle: async ({ usage }) => {
      if (route.billable && model !== undefined && reservation !== undefined)
        await settleCharge(ctx, owner, day, model, reservation, usage);
    },
  });
  if (relay.end === 'upstream_failed') {
    ctx.logger.warn(
      { ...base, model: outcome.model, bytes: relay.bytes, reason: relay.error },
      'gateway: upstream stream broke off',
    );
  }
  ctx.logger.info(
    {
      ...base,
      model: outcome.model,
      status: outcome.status,
      end: relay.end,
      bytes: relay.bytes,
      promptTokens: relay.usage?.promptTokens,
      completionTokens: relay.usage?.completionTokens,
      ms: ctx.clock.now() - started,
    },
    'gateway: request done',
  );
}
