import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { request, type Dispatcher } from 'undici';
import { z } from 'zod';
import { isForbiddenAddress, literalAddress, type AddressPolicy } from './address-policy.ts';
import { decodeText, discardBody, isSupportedEncoding, readCappedBody } from './capped-body.ts';
import { htmlToText } from './html-to-text.ts';
import { createPinnedAgent, type VettedAddress } from './pinned-connection.ts';
import { ServiceError, type HostService, type ServiceCallContext } from './service-registry.ts';
import type { ServiceTrust } from './service-trust.ts';
import { fenceUntrusted } from './untrusted-fence.ts';
import { comparableHost, type WebFetchConfig } from './web-fetch-config.ts';
import { errorMessage } from '../errors/error-message.ts';
import { errorCodeInChain } from '../errors/error-code.ts';
import { systemClock, type Clock } from '../time/clock.ts';

export const WEB_FETCH_SERVICE = 'web_fetch';

/** Web content is untrusted input, and the URL itself can carry data out. */
export const WEB_FETCH_TRUST: ServiceTrust = Object.freeze({
  public_source: true,
  secret_data: false,
  public_sink: true,
  dangerous_writes: false,
});

export const MAX_URL_LENGTH = 2048;

function httpUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL; write a full address such as "https://example.com/page"';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return `must use http or https, not ${url.protocol}`;
  if (url.username || url.password) return 'must not contain a user name or password';
  return undefined;
}

export const webFetchParamsSchema = z
  .object({
    url: z
      .string()
      .max(MAX_URL_LENGTH, `a URL may have at most ${MAX_URL_LENGTH} characters`)
      .superRefine((value, ctx) => {
        const problem = httpUrlProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', message: `url ${problem}` });
      }),
    /** Ask for less than the configured cap; more is clamped to it. */
    maxBytes: z.number().int().positive().optional(),
  })
  .strict();

export type WebFetchParams = z.output<typeof webFetchParamsSchema>;

export interface WebFetchResult {
  /** The URL finally fetched, after redirects. */
  url: string;
  status: number;
  /** The media type the server claimed (lowercase, without parameters), or "" when absent or malformed. */
  contentType: string;
  truncated: boolean;
  /** Fenced untrusted text, or a short note from Carapace when the body was not text. */
  content: string;
}

/** All addresses a host name resolves to. Injectable so tests never touch real DNS. */
export type HostResolver = (hostname: string) => Promise<string[]>;

export const systemResolver: HostResolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

export interface WebFetchDeps {
  config: WebFetchConfig;
  resolve?: HostResolver;
  /** Which addresses are refused; defaults to `isForbiddenAddress`. */
  isForbiddenAddress?: AddressPolicy;
  userAgent?: string;
  /** The deadline's time (default: the system clock; tests pass a fake one). */
  clock?: Clock;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$/;

function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function parseContentType(header: string | undefined): { mediaType: string; charset: string | undefined } {
  const [type = '', ...params] = (header ?? '').split(';');
  const mediaType = type.trim().toLowerCase();
  let charset: string | undefined;
  for (const param of params) {
    const [key = '', value = ''] = param.split('=');
    if (key.trim().toLowerCase() === 'charset') charset = value.trim().replace(/^"|"$/g, '') || undefined;
  }
  return { mediaType: MEDIA_TYPE.test(mediaType) ? mediaType : '', charset };
}

function isTextLike(mediaType: string): boolean {
  return (
    mediaType.startsWith('text/') ||
    mediaType === 'application/json' ||
    mediaType.endsWith('+json') ||
    mediaType === 'application/xml' ||
    mediaType.endsWith('+xml') ||
    mediaType === 'application/javascript' ||
    mediaType === 'application/x-javascript' ||
    mediaType === 'application/ecmascript'
  );
}

function isHtml(mediaType: string): boolean {
  return mediaType === 'text/html' || mediaType === 'application/xhtml+xml';
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

interface Hop {
  url: URL;
  addresses: VettedAddress[];
}

/**
 * Everything a hop must pass before any packet is sent: scheme, then every address the host has.
 * One forbidden address refuses the whole host, since the connection could land on any of them.
 */
async function vetHop(
  url: URL,
  deps: Required<Omit<WebFetchDeps, 'userAgent'>>,
  signal: AbortSignal,
): Promise<Hop> {
  const problem = httpUrlProblem(url.href);
  if (problem) throw new ServiceError('refused', `web_fetch refused ${url.href}: the URL ${problem}`);
  const host = comparableHost(url);
  const allowed = deps.config.allow_private_hosts.includes(host);
  const literal = literalAddress(url);
  if (literal !== undefined) {
    if (!allowed && deps.isForbiddenAddress(literal)) {
      throw new ServiceError(
        'refused',
        `web_fetch refused ${url.href}: ${literal} is a private, local or reserved address`,
      );
    }
    return { url, addresses: [{ address: literal, family: isIP(literal) === 6 ? 6 : 4 }] };
  }
  let resolved: string[];
  try {
    resolved = await untilAborted(deps.resolve(url.hostname), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    throw new ServiceError(
      'failed',
      `web_fetch could not resolve ${url.hostname} (${errorCodeInChain(error) ?? 'DNS error'})`,
    );
  }
  if (resolved.length === 0) throw new ServiceError('failed', `web_fetch could not resolve ${url.hostname}`);
  const addresses: VettedAddress[] = [];
  for (const address of resolved) {
    const family = isIP(address);
    // Not saying which address keeps the agent from mapping the owner's internal network.
    if (family === 0 || (!allowed && deps.isForbiddenAddress(address))) {
      throw new ServiceError(
        'refused',
        `web_fetch refused ${url.href}: ${url.hostname} resolves to a private, local or reserved address`,
      );
    }
    addresses.push({ address, family: family === 6 ? 6 : 4 });
  }
  return { url, addresses };
}

async function send(hop: Hop, dispatcher: Dispatcher, userAgent: string, signal: AbortSignal) {
  try {
    return await request(hop.url, {
      dispatcher,
      method: 'GET',
      headers: {
        'user-agent': userAgent,
        accept: 'text/html, text/plain;q=0.9, application/json;q=0.9, text/*;q=0.8, */*;q=0.1',
        'accept-encoding': 'gzip, deflate, br',
      },
      signal,
    });
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    const code = errorCodeInChain(error);
    const message = errorMessage(error);
    throw new ServiceError(
      'failed',
      `web_fetch could not fetch ${hop.url.href}: ${code ? `${code}: ` : ''}${message}`,
    );
  }
}

async function readResult(
  hop: Hop,
  response: Dispatcher.ResponseData,
  maxBytes: number,
  maxChars: number,
): Promise<WebFetchResult> {
  const headers = response.headers;
  const { mediaType, charset } = parseContentType(headerValue(headers, 'content-type'));
  const base = { url: hop.url.href, status: response.statusCode, contentType: mediaType };
  const encoding = headerValue(headers, 'content-encoding');
  if (!isTextLike(mediaType) || !isSupportedEncoding(encoding)) {
    discardBody(response.body);
    const what = !isTextLike(mediaType)
      ? mediaType
        ? `"${mediaType}", which is not text`
        : 'without a usable content type'
      : 'in an unsupported content encoding';
    return {
      ...base,
      truncated: false,
      content: `[web_fetch: the response came ${what}; its body was not read]`,
    };
  }
  const body = await readCappedBody(response.body, encoding, maxBytes);
  const raw = decodeText(body.bytes, charset);
  let text = isHtml(mediaType) ? htmlToText(raw) : raw;
  let truncated = body.truncated;
  if (text.length > maxChars) {
    text = text.slice(0, maxChars);
    truncated = true;
  }
  let content = fenceUntrusted(hop.url.host, text);
  if (truncated) content += `\n[web_fetch: truncated; only the first part of the response is shown]`;
  return { ...base, truncated, content };
}

async function fetchWithin(
  params: WebFetchParams,
  deps: Required<WebFetchDeps>,
  signal: AbortSignal,
): Promise<WebFetchResult> {
  const { config } = deps;
  const maxBytes = Math.min(params.maxBytes ?? config.max_bytes, config.max_bytes);
  let url = new URL(params.url);
  url.hash = '';
  for (let redirects = 0; ; redirects++) {
    const hop = await vetHop(url, deps, signal);
    const agent = createPinnedAgent(url.hostname, hop.addresses, config.timeout_ms);
    try {
      const response = await send(hop, agent, deps.userAgent, signal);
      const location = headerValue(response.headers, 'location');
      if (!REDIRECT_STATUSES.has(response.statusCode) || location === undefined) {
        return await readResult(hop, response, maxBytes, config.max_output_chars);
      }
      discardBody(response.body);
      if (redirects >= config.max_redirects) {
        throw new ServiceError(
          'failed',
          `web_fetch stopped after ${config.max_redirects} redirects at ${url.href}`,
        );
      }
      try {
        url = new URL(location, url);
      } catch {
        throw new ServiceError('failed', `web_fetch got a redirect from ${url.href} to an invalid location`);
      }
      url.hash = '';
    } finally {
      void agent.destroy().catch(() => undefined);
    }
  }
}

/** Fetches one URL under the SSRF rules and caps; throws ServiceError on refusal or failure. */
export async function webFetch(
  params: WebFetchParams,
  deps: WebFetchDeps,
  signal: AbortSignal,
): Promise<WebFetchResult> {
  const full: Required<WebFetchDeps> = {
    config: deps.config,
    resolve: deps.resolve ?? systemResolver,
    isForbiddenAddress: deps.isForbiddenAddress ?? isForbiddenAddress,
    userAgent: deps.userAgent ?? 'Carapace-web_fetch/0.1',
    clock: deps.clock ?? systemClock,
  };
  const timeout = new AbortController();
  const cancelTimer = full.clock.setTimer(
    () =>
      timeout.abort(
        new ServiceError('timeout', `web_fetch gave up on ${params.url} after ${deps.config.timeout_ms} ms`),
      ),
    deps.config.timeout_ms,
  );
  const both = AbortSignal.any([signal, timeout.signal]);
  try {
    return await fetchWithin(params, full, both);
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    if (timeout.signal.aborted) throw timeout.signal.reason;
    if (signal.aborted) throw new ServiceError('aborted', 'web_fetch was cancelled because the run ended');
    const message = errorMessage(error);
    throw new ServiceError('failed', `web_fetch failed: ${message}`, { cause: error });
  } finally {
    cancelTimer();
  }
}

export interface WebFetchServiceDeps extends Omit<WebFetchDeps, 'config'> {
  /** Read at each call: a reloaded `[web_fetch]` applies to the next fetch, one fetch keeps its limits. */
  config: () => WebFetchConfig;
}

export function createWebFetchService(deps: WebFetchServiceDeps): HostService<WebFetchParams> {
  return {
    name: WEB_FETCH_SERVICE,
    builtinTrust: WEB_FETCH_TRUST,
    paramsSchema: webFetchParamsSchema,
    call: (params: WebFetchParams, context: ServiceCallContext) =>
      webFetch(params, { ...deps, config: deps.config() }, context.signal),
  };
}
