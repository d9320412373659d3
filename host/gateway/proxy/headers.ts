import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderKind } from '../config.ts';

/**
 * Client headers that may reach the provider. Everything else is dropped: the gateway key, hop-by-hop
 * headers, cookies, organisation/project selectors (those belong to the host's account), SDK telemetry.
 */
const FORWARDED_REQUEST_HEADERS = [
  'accept',
  'content-type',
  'openai-beta',
  'anthropic-version',
  // Not anthropic-beta: beta flags switch on provider-side tools (MCP connector, code execution, …).
  'idempotency-key',
];

/** Provider headers the client may see; Set-Cookie, hop-by-hop and account identifiers stay behind. */
const FORWARDED_RESPONSE_HEADERS = new Set([
  'content-type',
  'cache-control',
  'retry-after',
  'retry-after-ms',
  'x-should-retry',
  'x-request-id',
  'request-id',
  'openai-processing-ms',
  'openai-version',
]);
const FORWARDED_RESPONSE_PREFIXES = ['x-ratelimit-', 'anthropic-ratelimit-'];

export const DEFAULT_ANTHROPIC_VERSION = '2023-06-01';

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The gateway key from `Authorization: Bearer …` (OpenAI SDKs) or `x-api-key` (Anthropic SDKs). */
export function gatewayKeyFrom(headers: IncomingHttpHeaders): string | undefined {
  const authorization = single(headers.authorization);
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    return match?.[1];
  }
  return single(headers['x-api-key'])?.trim();
}

export interface UpstreamHeaderOptions {
  kind: ProviderKind;
  /** The real provider key; empty for providers without authentication (e.g. a local Ollama). */
  apiKey: string;
  /** With an anthropic provider: `x-api-key` for its native routes, a bearer token for its OpenAI-compatible ones. */
  anthropicAuth: 'x-api-key' | 'bearer';
}

export function upstreamRequestHeaders(
  client: IncomingHttpHeaders,
  options: UpstreamHeaderOptions,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of FORWARDED_REQUEST_HEADERS) {
    const value = single(client[name]);
    if (value !== undefined) headers[name] = value;
  }
  // Usage is read from the body, so it must arrive uncompressed.
  headers['accept-encoding'] = 'identity';
  headers['user-agent'] = 'carapace-gateway';
  if (options.kind === 'anthropic') {
    headers['anthropic-version'] ??= DEFAULT_ANTHROPIC_VERSION;
    if (options.apiKey && options.anthropicAuth === 'x-api-key') headers['x-api-key'] = options.apiKey;
    if (options.apiKey && options.anthropicAuth === 'bearer')
      headers.authorization = `Bearer ${options.apiKey}`;
  } else if (options.apiKey) {
    headers.authorization = `Bearer ${options.apiKey}`;
  }
  return headers;
}

export function clientResponseHeaders(upstream: IncomingHttpHeaders): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (
      FORWARDED_RESPONSE_HEADERS.has(lower) ||
      FORWARDED_RESPONSE_PREFIXES.some((prefix) => lower.startsWith(prefix))
    ) {
      headers[lower] = value;
    }
  }
  return headers;
}
