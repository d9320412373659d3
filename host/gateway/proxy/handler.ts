import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import { allowBody, clampOutputTokens, IMAGE_WORST_TOKENS, inlineImages } from './body-allowlist.ts';
import type { GatewayConfig, ProviderConfig } from '../config.ts';
import { gatewayErrors, sendError, type ErrorDialect } from './errors.ts';
import { gatewayKeyFrom, upstreamRequestHeaders } from './headers.ts';
import type { KeyOwner, KeyRegistry } from '../key-registry.ts';
import type { LogLevels } from '../../logging/logger.ts';
import { worstCaseMicros } from '../spend/pricing.ts';
import { readBodyLimited } from '../request-body.ts';
import { filterModelList, readUpstreamBody, relayStream, sendBuffered } from './response-relay.ts';
import { isRetryableStatus } from './retry-policy.ts';
import { matchRoute, type Route } from './routes.ts';
import type { RunSlots } from './run-slots.ts';
import type { Reservation, SpendCap } from '../spend/spend-cap.ts';
import { callUpstream, type UpstreamSettings } from './upstream.ts';
import { chargedMicros } from '../spend/usage-cost.ts';
import type { PartialUsage } from '../spend/usage-extract.ts';
import type { UsageStore } from '../spend/usage-store.ts';
import { errorMessage } from '../../errors/error-message.ts';

export interface HandlerContext {
  /** Read at each request: a reloaded config's caps, prices and size limit apply to the next one. */
  config: () => GatewayConfig;
  provider: ProviderConfig;
  providerApiKey: string;
  allowedModels: () => ReadonlySet<string>;
  /** The most output tokens one call may ask for; larger requests are clamped to it. */
  maxOutputTokens: number;
  keys: KeyRegistry;
  spendCap: SpendCap;
  runSlots: RunSlots;
  usageStore: UsageStore;
  upstream: UpstreamSettings;
  dayOf: (epochMs: number) => string;
  now: () => number;
  logger: LogLevels;
  events: UpstreamEvents;
}

/**
 * What the host hears about a run's provider calls, to decide what the run's group and the owner are told.
 * Both may be called from inside a request: they must only record or enqueue, never throw.
 */
export interface UpstreamEvents {
  /** The provider refused the host's key: no retry of the run can help until the owner fixes it. */
  authRejected(owner: KeyOwner, status: number): void;
  /** A request of the run has waited `waitedMs` for the provider's first answer (`slow_notice_ms`). */
  slow(owner: KeyOwner, waitedMs: number): void;
  /** A request of the run was refused at the group's spend cap: retrying the run cannot help today. */
  spendCapRefused(owner: KeyOwner, message: string): void;
  /** The provider did not start answering within a deadline; `message` names the setting. Final for the run. */
  providerTimedOut(owner: KeyOwner, message: string): void;
}

const streamFlagsSchema = z.looseObject({
  model: z.string().optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
});

type PreparedBody =
  | {
      ok: true;
      body: Record<string, unknown>;
      model: string;
      maxOutputTokens: number;
      stripUsageOnlyChunks: boolean;
    }
  | { ok: false; message: string };

function prepareBody(raw: Buffer, route: Route, defaultModel: string, outputLimit: number): PreparedBody {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return { ok: false, message: 'request body is not valid JSON' };
  }
  if (route.body === undefined) return { ok: false, message: `${route.path} takes no request body` };
  const allowed = allowBody(route.body, route.path, json);
  if (!allowed.ok) return { ok: false, message: allowed.message };
  const body = allowed.body;
  const flags = streamFlagsSchema.parse(body);
  const model = flags.model ?? defaultModel;
  body.model = model;
  const maxOutputTokens = clampOutputTokens(route.body, body, outputLimit);
  let stripUsageOnlyChunks = false;
  if (route.requestStreamUsage && flags.stream === true) {
    // Without this flag OpenAI-style streams carry no usage at all, and spend could not be counted.
    stripUsageOnlyChunks = flags.stream_options?.include_usage !== true;
    body.stream_options = { ...(flags.stream_options ?? {}), include_usage: true };
  }
  // The responses API keeps every exchange in the owner's account unless told not to.
  if (route.body === 'responses') body.store = false;
  return { ok: true, body, model, maxOutputTokens, stripUsageOnlyChunks };
}

function redact(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}

/** One request on its way: what the relay needs to answer it and to bill it. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  route: Route;
  query: string;
  owner: KeyOwner;
  started: number;
  day: string;
  controller: AbortController;
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

    // One billable request per run at a time: parallel calls would each be admitted before any settled.
    const release = route.billable ? ctx.runSlots.take(owner.runId) : () => undefined;
    if (release === undefined) {
      sendError(res, dialect, gatewayErrors.busy());
      req.resume();
      return;
    }
    try {
      await forward(req, res, route, query, owner, started);
    } finally {
      release();
    }
  };

  const forward = async (
    req: IncomingMessage,
    res: ServerResponse,
    route: Route,
    query: string,
    owner: KeyOwner,
    started: number,
  ) => {
    const dialect = route.dialect;
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });

    const day = ctx.dayOf(started);
    let body: Record<string, unknown> | undefined;
    let model: string | undefined;
    let stripUsageOnlyChunks = false;
    let reservation: Reservation | undefined;
    if (route.method === 'POST') {
      const read = await readBodyLimited(req, ctx.config().max_request_bytes);
      if (!read.ok) {
        if (read.reason === 'too_large')
          sendError(res, dialect, gatewayErrors.tooLarge(ctx.config().max_request_bytes));
        return;
      }
      const prepared = prepareBody(read.body, route, ctx.provider.model, ctx.maxOutputTokens);
      if (!prepared.ok) {
        ctx.logger.warn(
          { runId: owner.runId, groupId: owner.groupId, route: route.path, reason: prepared.message },
          'gateway: request body refused',
        );
        sendError(res, dialect, gatewayErrors.badRequest(prepared.message));
        return;
      }
      const allowed = ctx.allowedModels();
      if (!allowed.has(prepared.model)) {
        sendError(res, dialect, gatewayErrors.modelNotAllowed(prepared.model, [...allowed]));
        return;
      }
      ({ body, model, stripUsageOnlyChunks } = prepared);
      if (route.billable) {
        // Every prompt byte as a token, but an inline image as what a provider bills for one (see
        // IMAGE_WORST_TOKENS), not as its base64 bytes.
        const images = inlineImages(route.body ?? 'chat', body);
        const worst = worstCaseMicros(
          chainFor(model),
          read.body.length - images.chars + images.count * IMAGE_WORST_TOKENS,
          prepared.maxOutputTokens,
          ctx.config(),
        );
        const reserved = await ctx.spendCap.reserve(owner.groupId, day, worst);
        if (!reserved.ok) {
          const message = ctx.spendCap.message(owner.groupId, reserved.capUsd);
          tellHost(ctx, owner, 'spendCapRefused', () => ctx.events.spendCapRefused(owner, message));
          sendError(res, dialect, gatewayErrors.spendCap(message));
          return;
        }
        reservation = reserved.reservation;
      }
    }
    // Whatever happens below, the reservation is settled once; by default at its full worst case, which is
    // what a request costs when the provider may have worked on it without saying how much (a client
    // that went away, a timeout, a stream without usage).
    try {
      await exchange(
        { req, res, route, query, owner, started, day, controller },
        {
          body,
          model,
          stripUsageOnlyChunks,
          reservation,
        },
      );
    } finally {
      const charge = reservation;
      if (charge !== undefined && model !== undefined) {
        const unreported = model;
        await charge
          .settle(() => record(ctx, owner, day, unreported, undefined, charge.micros))
          .catch((error: unknown) => logRecordFailure(ctx, owner, unreported, error));
      }
    }
  };

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

  const chainFor = (model: string): string[] => [
    model,
    ...ctx.provider.fallback_models.filter((fallback) => fallback !== model),
  ];

  const exchange = async (
    { req, res, route, query, owner, started, day, controller }: Exchange,
    request: {
      body: Record<string, unknown> | undefined;
      model: string | undefined;
      stripUsageOnlyChunks: boolean;
      reservation: Reservation | undefined;
    },
  ) => {
    const dialect = route.dialect;
    const { body, model, stripUsageOnlyChunks, reservation } = request;
    const models = model === undefined ? [] : chainFor(model);
    const notify = (what: string, call: () => void): void => tellHost(ctx, owner, what, call);
    const deadline = firstByteDeadline(owner);
    if (route.billable && deadline.ms <= 0) {
      await reservation?.settle(() => 0);
      notify('providerTimedOut', () => ctx.events.providerTimedOut(owner, deadline.message));
      sendError(res, dialect, gatewayErrors.timeout(deadline.message));
      return;
    }
    const waitStarted = ctx.now();
    // Only the wait for the first answer: a stream that has started shows the group the run is alive.
    const slowAfter = ctx.config().slow_notice_ms;
    const slowTimer =
      route.billable && slowAfter > 0
        ? setTimeout(() => notify('slow', () => ctx.events.slow(owner, slowAfter)), slowAfter)
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
    }).finally(() => clearTimeout(slowTimer));
    if (route.billable && outcome.kind === 'timeout')
      firstByteWaits.set(owner, (firstByteWaits.get(owner) ?? 0) + ctx.now() - waitStarted);

    const base = { runId: owner.runId, groupId: owner.groupId, route: route.path };
    switch (outcome.kind) {
      case 'aborted':
        ctx.logger.info(
          { ...base, model, ms: ctx.now() - started },
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

    if (outcome.status < 200 || outcome.status >= 300 || route.filterModelList) {
      // A provider error is not billed.
      await reservation?.settle(() => 0);
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
      const filtered =
        ok && route.filterModelList ? filterModelList(buffered, ctx.allowedModels()) : undefined;
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
    if (route.billable && outcome.model !== undefined && reservation !== undefined) {
      const answered = outcome.model;
      const usage = relay.usage;
      await reservation
        .settle(() => record(ctx, owner, day, answered, usage, reservation.micros))
        .catch((error: unknown) => logRecordFailure(ctx, owner, answered, error));
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
      ctx.logger.error({ err: errorMessage(error), route: req.url }, 'gateway: request failed');
      sendError(res, 'openai', gatewayErrors.unreachable('internal gateway error'));
    });
  };
}

/** Tells the host about a run's request; the host's handler failing must not fail the request. */
function tellHost(ctx: HandlerContext, owner: KeyOwner, what: string, call: () => void): void {
  try {
    call();
  } catch (error) {
    ctx.logger.error(
      { runId: owner.runId, groupId: owner.groupId, err: String(error) },
      `gateway: the host's ${what} handler failed`,
    );
  }
}

function logRecordFailure(ctx: HandlerContext, owner: KeyOwner, model: string, error: unknown): void {
  ctx.logger.error(
    {
      runId: owner.runId,
      groupId: owner.groupId,
      model,
      err: errorMessage(error),
    },
    'gateway: recording usage failed',
  );
}

/**
 * Stores a request's usage and returns its cost. Without a usage report the cost is unknown: the
 * reserved worst case is charged, so a provider (or a stream cut short, or a client that went away while
 * the provider worked) that stays silent about usage cannot let a group spend past its cap.
 */
async function record(
  ctx: HandlerContext,
  owner: KeyOwner,
  day: string,
  model: string,
  usage: PartialUsage | undefined,
  reservedMicros: number,
): Promise<number> {
  const tokens = { promptTokens: usage?.promptTokens ?? 0, completionTokens: usage?.completionTokens ?? 0 };
  const cost = chargedMicros(model, usage, reservedMicros, ctx.config());
  if (usage === undefined) {
    ctx.logger.warn(
      { runId: owner.runId, groupId: owner.groupId, model, costMicros: cost },
      'gateway: no usage reported for this request; charged its reserved worst case',
    );
  }
  await ctx.usageStore.recordUsage({
    runId: owner.runId,
    groupId: owner.groupId,
    day,
    model,
    ...tokens,
    costMicros: cost,
  });
  return cost;
}
