import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { bodyPolicyViolation } from './body-policy.ts';
import type { GatewayConfig, ProviderConfig } from './config.ts';
import { gatewayErrors, sendError, type ErrorDialect } from './errors.ts';
import { gatewayKeyFrom, upstreamRequestHeaders } from './headers.ts';
import type { KeyOwner, KeyRegistry } from './key-registry.ts';
import type { GatewayLogger } from './logger.ts';
import { costMicros } from './pricing.ts';
import { readBodyLimited } from './request-body.ts';
import { filterModelList, readUpstreamBody, relayStream, sendBuffered } from './response-relay.ts';
import { isRetryableStatus } from './retry-policy.ts';
import { matchRoute, type Route } from './routes.ts';
import type { SpendCap } from './spend-cap.ts';
import { callUpstream, type UpstreamSettings } from './upstream.ts';
import type { PartialUsage } from './usage-extract.ts';
import type { UsageStore } from './usage-store.ts';

export interface HandlerContext {
  config: GatewayConfig;
  provider: ProviderConfig;
  providerApiKey: string;
  allowedModels: ReadonlySet<string>;
  keys: KeyRegistry;
  spendCap: SpendCap;
  usageStore: UsageStore;
  upstream: UpstreamSettings;
  dayOf: (epochMs: number) => string;
  now: () => number;
  logger: GatewayLogger;
}

const requestBodySchema = z.looseObject({
  model: z.string().min(1, 'model must not be empty').optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
});

type PreparedBody =
  | { ok: true; body: Record<string, unknown>; model: string; stripUsageOnlyChunks: boolean }
  | { ok: false; message: string };

function prepareBody(raw: Buffer, route: Route, defaultModel: string): PreparedBody {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return { ok: false, message: 'request body is not valid JSON' };
  }
  const parsed = requestBodySchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join('.')}: ` : '';
    return {
      ok: false,
      message: `invalid request body: ${where}${issue?.message ?? 'expected a JSON object'}`,
    };
  }
  const body: Record<string, unknown> = { ...parsed.data };
  const violation = bodyPolicyViolation(body);
  if (violation) return { ok: false, message: violation };
  const model = parsed.data.model ?? defaultModel;
  body.model = model;
  let stripUsageOnlyChunks = false;
  if (route.requestStreamUsage && parsed.data.stream === true) {
    // Without this flag OpenAI-style streams carry no usage at all, and spend could not be counted.
    stripUsageOnlyChunks = parsed.data.stream_options?.include_usage !== true;
    body.stream_options = { ...(parsed.data.stream_options ?? {}), include_usage: true };
  }
  return { ok: true, body, model, stripUsageOnlyChunks };
}

function redact(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}

/** The HTTP handler shared by every bound address. */
export function createRequestHandler(
  ctx: HandlerContext,
): (req: IncomingMessage, res: ServerResponse) => void {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const started = ctx.now();
    const match = matchRoute(req.method, req.url, ctx.provider.kind);
    if (!match.ok) {
      sendError(res, match.dialect, match.error);
      return;
    }
    const { route, query } = match;
    const dialect: ErrorDialect = route.dialect;

    const owner = ctx.keys.verify(gatewayKeyFrom(req.headers));
    if (owner === undefined) {
      ctx.logger.warn(
        { route: route.path, remote: req.socket.remoteAddress },
        'gateway: request with an invalid gateway key',
      );
      sendError(res, dialect, gatewayErrors.unauthorized());
      return;
    }

    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });

    const day = ctx.dayOf(started);
    if (route.billable) {
      const cap = await ctx.spendCap.check(owner.groupId, day);
      if (cap.reached) {
        sendError(res, dialect, gatewayErrors.spendCap(ctx.spendCap.message(owner.groupId, cap.capUsd)));
        return;
      }
    }

    let body: Record<string, unknown> | undefined;
    let model: string | undefined;
    let stripUsageOnlyChunks = false;
    if (route.method === 'POST') {
      const read = await readBodyLimited(req, ctx.config.max_request_bytes);
      if (!read.ok) {
        if (read.reason === 'too_large')
          sendError(res, dialect, gatewayErrors.tooLarge(ctx.config.max_request_bytes));
        return;
      }
      const prepared = prepareBody(read.body, route, ctx.provider.model);
      if (!prepared.ok) {
        sendError(res, dialect, gatewayErrors.badRequest(prepared.message));
        return;
      }
      if (!ctx.allowedModels.has(prepared.model)) {
        sendError(res, dialect, gatewayErrors.modelNotAllowed(prepared.model, [...ctx.allowedModels]));
        return;
      }
      ({ body, model, stripUsageOnlyChunks } = prepared);
    }

    const models =
      model === undefined
        ? []
        : [model, ...ctx.provider.fallback_models.filter((fallback) => fallback !== model)];
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
    });

    const base = { runId: owner.runId, groupId: owner.groupId, route: route.path };
    switch (outcome.kind) {
      case 'aborted':
        ctx.logger.info(
          { ...base, model, ms: ctx.now() - started },
          'gateway: client went away before the provider answered',
        );
        return;
      case 'timeout':
        ctx.logger.warn(
          { ...base, model, timeoutMs: ctx.config.upstream_timeout_ms },
          'gateway: upstream timeout',
        );
        sendError(res, dialect, gatewayErrors.timeout(ctx.config.upstream_timeout_ms));
        return;
      case 'unreachable':
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
      await readUpstreamBody(outcome.body, 64 * 1024).catch(() => undefined);
      ctx.logger.error({ ...base, status: outcome.status }, 'gateway: provider rejected the host API key');
      sendError(res, dialect, gatewayErrors.upstreamAuth(outcome.status));
      return;
    }

    if (outcome.status < 200 || outcome.status >= 300 || route.filterModelList) {
      const buffered = await readUpstreamBody(outcome.body).catch(() => undefined);
      if (buffered === undefined) {
        if (!controller.signal.aborted)
          sendError(
            res,
            dialect,
            gatewayErrors.unreachable('the provider sent an unreadable or oversized response'),
          );
        return;
      }
      const ok = outcome.status >= 200 && outcome.status < 300;
      const filtered = ok && route.filterModelList ? filterModelList(buffered, ctx.allowedModels) : undefined;
      const text = filtered ?? redact(buffered.toString('utf8'), ctx.providerApiKey);
      const extra: Record<string, string> =
        outcome.exhaustedRetries && isRetryableStatus(outcome.status) ? { 'x-should-retry': 'false' } : {};
      if (filtered !== undefined) extra['content-type'] = 'application/json';
      if (!ok)
        ctx.logger.warn(
          { ...base, model: outcome.model, status: outcome.status },
          'gateway: provider returned an error',
        );
      sendBuffered(res, outcome.status, outcome.headers, text, extra);
      return;
    }

    const relay = await relayStream(res, outcome, { stripUsageOnlyChunks, signal: controller.signal });
    if (relay.end === 'upstream_failed') {
      ctx.logger.warn(
        { ...base, model: outcome.model, bytes: relay.bytes, reason: relay.error },
        'gateway: upstream stream broke off',
      );
    }
    if (route.billable && outcome.model !== undefined) {
      const model = outcome.model;
      await record(ctx, owner, day, model, relay.usage).catch((error: unknown) =>
        ctx.logger.error(
          { ...base, model, err: error instanceof Error ? error.message : String(error) },
          'gateway: recording usage failed',
        ),
      );
    }
    if (relay.end === 'complete') res.end();
    ctx.logger.info(
      {
        ...base,
        model: outcome.model,
        status: outcome.status,
        end: relay.end,
        bytes: relay.bytes,
        promptTokens: relay.usage?.promptTokens,
        completionTokens: relay.usage?.completionTokens,
        ms: ctx.now() - started,
      },
      'gateway: request done',
    );
  };

  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      ctx.logger.error(
        { err: error instanceof Error ? error.message : String(error), route: req.url },
        'gateway: request failed',
      );
      sendError(res, 'openai', gatewayErrors.unreachable('internal gateway error'));
    });
  };
}

async function record(
  ctx: HandlerContext,
  owner: KeyOwner,
  day: string,
  model: string,
  usage: PartialUsage | undefined,
): Promise<void> {
  const tokens = { promptTokens: usage?.promptTokens ?? 0, completionTokens: usage?.completionTokens ?? 0 };
  if (usage === undefined) {
    ctx.logger.warn(
      { runId: owner.runId, groupId: owner.groupId, model },
      'gateway: the provider reported no usage; counted as 0 tokens',
    );
  }
  const cost = costMicros(model, tokens, ctx.config.prices);
  await ctx.usageStore.recordUsage({
    runId: owner.runId,
    groupId: owner.groupId,
    day,
    model,
    ...tokens,
    costMicros: cost,
  });
  // Tell the group as soon as this request crossed the cap, not only at its next request.
  if (cost > 0) await ctx.spendCap.check(owner.groupId, day);
}
