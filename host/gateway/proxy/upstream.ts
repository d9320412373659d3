import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { LogLevels } from '../../logging/logger.ts';
import { isRetryableStatus, retryAfterMs, UPSTREAM_RETRY_JITTER } from './retry-policy.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { backoffMs } from '../../time/backoff.ts';
import { errorCodeInChain } from '../../errors/error-code.ts';
import { dispatchUpstream, readBody, type UpstreamBody } from './upstream-dispatch.ts';

export interface UpstreamSettings {
  dispatcher: Dispatcher;
  /** Base URL the route suffix is appended to, e.g. "https://api.openai.com/v1". */
  apiBase: string;
  timeoutMs: number;
  retryAttempts: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  now: () => number;
  logger: LogLevels;
}

export interface UpstreamCall {
  method: 'GET' | 'POST';
  /** Path after the API base, e.g. "/chat/completions". */
  suffix: string;
  headers: Record<string, string>;
  /** The JSON request body; its `model` is replaced for each model of the chain. */
  body: Record<string, unknown> | undefined;
  /** Models to try in order: the requested one, then the fallbacks. Empty for calls without a model. */
  models: readonly string[];
  signal: AbortSignal;
  /** How long each attempt may wait for response headers (the run's first-byte deadline, what is left of it). */
  firstByteTimeoutMs: number;
}

export type UpstreamOutcome =
  | {
      kind: 'response';
      /** The model actually sent (undefined for model-less calls such as GET /models). */
      model: string | undefined;
      status: number;
      headers: IncomingHttpHeaders;
      body: UpstreamBody;
      /** The gateway already retried or fell back: the client should not retry a failure on top. */
      exhaustedRetries: boolean;
    }
  | { kind: 'timeout' }
  | { kind: 'unreachable'; reason: string; model: string | undefined }
  | { kind: 'aborted' };

type Attempt =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: UpstreamBody }
  | { kind: 'timeout' }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'aborted' };

function describe(error: unknown): string {
  const code = errorCodeInChain(error);
  const message = errorMessage(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

async function attempt(
  settings: UpstreamSettings,
  call: UpstreamCall,
  target: { origin: string; path: string },
  model: string | undefined,
): Promise<Attempt> {
  // The body names the first model of the chain already: only a fallback needs a copy with its own.
  const body =
    call.body === undefined
      ? undefined
      : JSON.stringify(
          model === undefined || call.body.model === model ? call.body : { ...call.body, model },
        );
  const head = await dispatchUpstream(
    settings.dispatcher,
    {
      origin: target.origin,
      path: target.path,
      method: call.method,
      headers: call.headers,
      body,
      headersTimeout: call.firstByteTimeoutMs,
      bodyTimeout: settings.timeoutMs,
    },
    call.signal,
  );
  if (head.kind === 'response') return head;
  if (call.signal.aborted) return { kind: 'aborted' };
  if (errorCodeInChain(head.error) === 'UND_ERR_HEADERS_TIMEOUT') return { kind: 'timeout' };
  return { kind: 'unreachable', reason: describe(head.error) };
}

async function discard(body: UpstreamBody): Promise<void> {
  // Past the limit the connection is dropped instead of reused; nothing else to do.
  await readBody(body, 1024 * 1024).catch(() => undefined);
}

/** The origin and path of a call's URL: what the dispatcher takes. */
function targetOf(apiBase: string, suffix: string): { origin: string; path: string } {
  const url = new URL(apiBase + suffix);
  return { origin: url.origin, path: url.pathname + url.search };
}

/**
 * Sends a call upstream. Retries 429/5xx and connection failures with backoff (honouring retry-after up to
 * retryMaxDelayMs), then moves down the model chain. All of this happens before the caller has written
 * anything to the client, so a retry never duplicates streamed output. A timeout waiting for response
 * headers is final: retrying a provider that hangs would multiply the wait.
 */
export async function callUpstream(settings: UpstreamSettings, call: UpstreamCall): Promise<UpstreamOutcome> {
  const chain: readonly (string | undefined)[] = call.models.length > 0 ? call.models : [undefined];
  const target = targetOf(settings.apiBase, call.suffix);
  let tried = 0;
  for (const [modelIndex, model] of chain.entries()) {
    const lastModel = modelIndex === chain.length - 1;
    for (let retry = 0; ; retry++) {
      const result = await attempt(settings, call, target, model);
      tried++;
      if (result.kind === 'aborted' || result.kind === 'timeout') return result;
      if (result.kind === 'response' && !isRetryableStatus(result.status)) {
        return { ...result, model, exhaustedRetries: tried > 1 };
      }

      const requested = result.kind === 'response' ? retryAfterMs(result.headers, settings.now()) : undefined;
      const delay =
        requested ?? backoffMs(retry, { baseMs: settings.retryBaseMs, jitter: UPSTREAM_RETRY_JITTER });
      const retryThisModel = retry < settings.retryAttempts && delay <= settings.retryMaxDelayMs;
      const what = result.kind === 'response' ? `HTTP ${result.status}` : result.reason;

      if (!retryThisModel && lastModel) {
        if (result.kind === 'unreachable') return { ...result, model };
        return {
          ...result,
          model,
          exhaustedRetries: tried > 1 || chain.length > 1 || settings.retryAttempts > 0,
        };
      }
      if (result.kind === 'response') await discard(result.body);
      if (!retryThisModel) {
        settings.logger.warn(
          { model, next: chain[modelIndex + 1], failure: what },
          'gateway: falling back to the next model',
        );
        break;
      }
      settings.logger.warn(
        { model, attempt: retry + 1, delayMs: delay, failure: what },
        'gateway: retrying upstream request',
      );
      try {
        await settings.sleep(delay, call.signal);
      } catch {
        return { kind: 'aborted' };
      }
      if (call.signal.aborted) return { kind: 'aborted' };
    }
  }
  // The loop always returns on the last model; this satisfies the type checker.
  return { kind: 'unreachable', reason: 'no model to try', model: undefined };
}
