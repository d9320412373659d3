import type { BodyKind } from './body-allowlist.ts';
import type { ProviderKind } from '../config.ts';
import { gatewayErrors, type ErrorDialect, type GatewayError } from './errors.ts';

export interface Route {
  path: string;
  method: 'GET' | 'POST';
  /** Appended to the provider's API base (which already ends in /v1). */
  suffix: string;
  dialect: ErrorDialect;
  /** Requests carry a `model`: allowlist, spend cap, retries over the fallback chain, usage. */
  billable: boolean;
  /** Which request-body allowlist applies (POST routes). */
  body: BodyKind | undefined;
  /** Streaming chat completions only report usage when asked via `stream_options.include_usage`. */
  requestStreamUsage: boolean;
  /** The provider's model list is cut down to the models a container may use. */
  filterModelList: boolean;
  kinds: readonly ProviderKind[];
  /** How the real key is sent when the provider kind is anthropic (its OpenAI-compatible layer takes a bearer token). */
  anthropicAuth: 'x-api-key' | 'bearer';
  /** Shown when the route is used with a provider kind that lacks it. */
  kindHint: string;
}

const ROUTES: readonly Route[] = [
  {
    path: '/v1/chat/completions',
    method: 'POST',
    suffix: '/chat/completions',
    dialect: 'openai',
    billable: true,
    body: 'chat',
    requestStreamUsage: true,
    filterModelList: false,
    // Anthropic serves an OpenAI-compatible chat completions endpoint under the same base.
    kinds: ['openai', 'anthropic'],
    anthropicAuth: 'bearer',
    kindHint: '',
  },
  {
    path: '/v1/responses',
    method: 'POST',
    suffix: '/responses',
    dialect: 'openai',
    billable: true,
    body: 'responses',
    requestStreamUsage: false,
    filterModelList: false,
    kinds: ['openai'],
    anthropicAuth: 'bearer',
    kindHint: 'use /v1/messages or /v1/chat/completions',
  },
  {
    path: '/v1/models',
    method: 'GET',
    suffix: '/models',
    dialect: 'openai',
    billable: false,
    body: undefined,
    requestStreamUsage: false,
    filterModelList: true,
    kinds: ['openai', 'anthropic'],
    anthropicAuth: 'x-api-key',
    kindHint: '',
  },
  {
    path: '/v1/messages',
    method: 'POST',
    suffix: '/messages',
    dialect: 'anthropic',
    billable: true,
    body: 'messages',
    requestStreamUsage: false,
    filterModelList: false,
    kinds: ['anthropic'],
    anthropicAuth: 'x-api-key',
    kindHint: 'use /v1/chat/completions, or set [provider].kind = "anthropic"',
  },
];

export type RouteMatch =
  { ok: true; route: Route; query: string } | { ok: false; dialect: ErrorDialect; error: GatewayError };

export function matchRoute(
  method: string | undefined,
  rawUrl: string | undefined,
  kind: ProviderKind,
): RouteMatch {
  const url = rawUrl ?? '/';
  const queryStart = url.indexOf('?');
  const path = queryStart === -1 ? url : url.slice(0, queryStart);
  const query = queryStart === -1 ? '' : url.slice(queryStart);
  const verb = method ?? 'GET';
  const route = ROUTES.find((candidate) => candidate.path === path);
  if (route === undefined) {
    return { ok: false, dialect: 'openai', error: gatewayErrors.unknownRoute(verb, path) };
  }
  if (route.method !== verb) {
    return {
      ok: false,
      dialect: route.dialect,
      error: gatewayErrors.methodNotAllowed(verb, path, route.method),
    };
  }
  if (!route.kinds.includes(kind)) {
    return {
      ok: false,
      dialect: route.dialect,
      error: gatewayErrors.routeNotForProvider(path, kind, route.kindHint),
    };
  }
  return { ok: true, route, query };
}
