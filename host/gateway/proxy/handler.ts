import type { IncomingMessage, ServerResponse } from 'node:http';
import { IMAGE_WORST_TOKENS, inlineImages } from './body-allowlist.ts';
import { gatewayErrors, sendError, type ErrorDialect } from './errors.ts';
import { gatewayKeyFrom } from './headers.ts';
import type { KeyOwner } from '../key-registry.ts';
import { worstCaseMicros } from '../spend/pricing.ts';
import { readBodyLimited } from '../request-body.ts';
import { matchRoute, type Route } from './routes.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { settleCharge, tellHost, type HandlerContext } from './handler-context.ts';
import { prepareBody } from './prepare-body.ts';
import { chainFor, createExchange, type PreparedCall } from './exchange.ts';

export type { HandlerContext, UpstreamEvents } from './handler-context.ts';

/**
 * The HTTP handler shared by every bound address: the route and the run's key, one billable request per run
 * at a time, the body allowlisted and its worst case reserved against the group's cap, then the exchange
 * with the provider (exchange.ts). Whatever happens there, the reservation is settled once.
 */
export function createRequestHandler(
  ctx: HandlerContext,
): (req: IncomingMessage, res: ServerResponse) => void {
  const exchange = createExchange(ctx);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const started = ctx.clock.now();
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
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const day = ctx.dayOf(started);
    const call = route.method === 'POST' ? await admitBody(req, res, route, owner, day) : emptyCall();
    if (call === undefined) return;
    // Whatever happens below, the reservation is settled once; by default at its full worst case, which is
    // what a request costs when the provider may have worked on it without saying how much (a client
    // that went away, a timeout, a stream without usage).
    try {
      await exchange({ req, res, route, query, owner, started, day, controller }, call);
    } finally {
      const { reservation, model } = call;
      if (reservation !== undefined && model !== undefined)
        await settleCharge(ctx, owner, day, model, reservation, undefined);
    }
  };

  /** Reads, allowlists and reserves a request's body; undefined once the request has been refused. */
  const admitBody = async (
    req: IncomingMessage,
    res: ServerResponse,
    route: Route,
    owner: KeyOwner,
    day: string,
  ): Promise<PreparedCall | undefined> => {
    const dialect = route.dialect;
    const read = await readBodyLimited(req, ctx.config().max_request_bytes);
    if (!read.ok) {
      if (read.reason === 'too_large')
        sendError(res, dialect, gatewayErrors.tooLarge(ctx.config().max_request_bytes));
      return undefined;
    }
    const prepared = prepareBody(read.body, route, ctx.provider.model, ctx.maxOutputTokens);
    if (!prepared.ok) {
      ctx.logger.warn(
        { runId: owner.runId, groupId: owner.groupId, route: route.path, reason: prepared.message },
        'gateway: request body refused',
      );
      sendError(res, dialect, gatewayErrors.badRequest(prepared.message));
      return undefined;
    }
    const allowed = ctx.allowedModels();
    if (!allowed.has(prepared.model)) {
      sendError(res, dialect, gatewayErrors.modelNotAllowed(prepared.model, [...allowed]));
      return undefined;
    }
    const { body, model, stripUsageOnlyChunks } = prepared;
    if (!route.billable) return { body, model, stripUsageOnlyChunks, reservation: undefined };
    // Every prompt byte as a token, but an inline image as what a provider bills for one (see
    // IMAGE_WORST_TOKENS), not as its base64 bytes.
    const images = inlineImages(route.body ?? 'chat', body);
    const worst = worstCaseMicros(
      chainFor(ctx, model),
      read.body.length - images.chars + images.count * IMAGE_WORST_TOKENS,
      prepared.maxOutputTokens,
      ctx.config(),
    );
    const reserved = await ctx.spendCap.reserve(owner.groupId, day, worst);
    if (!reserved.ok) {
      const message = ctx.spendCap.message(owner.groupId, reserved.capUsd);
      tellHost(ctx, owner, 'spendCapRefused', () => ctx.events.spendCapRefused(owner, message));
      sendError(res, dialect, gatewayErrors.spendCap(message));
      return undefined;
    }
    return { body, model, stripUsageOnlyChunks, reservation: reserved.reservation };
  };

  return (req, res) => {
    handle(req, res).catch((error: unknown) => {
      ctx.logger.error({ err: errorMessage(error), route: req.url }, 'gateway: request failed');
      sendError(res, 'openai', gatewayErrors.unreachable('internal gateway error'));
    });
  };
}

function emptyCall(): PreparedCall {
  return { body: undefined, model: undefined, stripUsageOnlyChunks: false, reservation: undefined };
}
