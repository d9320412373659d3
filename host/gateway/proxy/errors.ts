import type { ServerResponse } from 'node:http';

/** Error bodies follow the API the client is speaking, so its SDK surfaces the message. */
export type ErrorDialect = 'openai' | 'anthropic';

export interface GatewayError {
  status: number;
  /** Anthropic-style error type; also used as the OpenAI `type`. */
  type: string;
  code: string;
  message: string;
  headers?: Record<string, string>;
}

export function errorBody(dialect: ErrorDialect, error: GatewayError): string {
  if (dialect === 'anthropic') {
    return JSON.stringify({ type: 'error', error: { type: error.type, message: error.message } });
  }
  return JSON.stringify({
    error: { message: error.message, type: error.type, param: null, code: error.code },
  });
}

export function sendError(res: ServerResponse, dialect: ErrorDialect, error: GatewayError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = errorBody(dialect, error);
  res.writeHead(error.status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...error.headers,
  });
  res.end(body);
}

export const gatewayErrors = {
  unauthorized: (): GatewayError => ({
    status: 401,
    type: 'authentication_error',
    code: 'invalid_api_key',
    message: 'invalid or expired gateway key: use the key this run got with run.start',
  }),
  unknownRoute: (method: string, path: string): GatewayError => ({
    status: 404,
    type: 'not_found_error',
    code: 'unknown_route',
    message: `no route ${method} ${path}; the gateway serves POST /v1/chat/completions, POST /v1/responses, GET /v1/models and POST /v1/messages`,
  }),
  routeNotForProvider: (path: string, kind: string, hint: string): GatewayError => ({
    status: 404,
    type: 'not_found_error',
    code: 'route_not_supported',
    message: `${path} is not available with a provider of kind "${kind}"; ${hint}`,
  }),
  methodNotAllowed: (method: string, path: string, allowed: string): GatewayError => ({
    status: 405,
    type: 'invalid_request_error',
    code: 'method_not_allowed',
    message: `${method} is not allowed on ${path}; use ${allowed}`,
    headers: { allow: allowed },
  }),
  tooLarge: (limit: number): GatewayError => ({
    status: 413,
    type: 'request_too_large',
    code: 'request_too_large',
    message: `request body exceeds the gateway limit of ${limit} bytes; shorten the conversation or raise [gateway].max_request_bytes`,
    headers: { connection: 'close' },
  }),
  badRequest: (message: string): GatewayError => ({
    status: 400,
    type: 'invalid_request_error',
    code: 'invalid_request',
    message,
  }),
  modelNotAllowed: (model: string, allowed: readonly string[]): GatewayError => ({
    status: 403,
    type: 'permission_error',
    code: 'model_not_allowed',
    message: `model "${model}" is not allowed by the gateway; allowed: ${allowed.join(', ')} (the owner can change [gateway].allowed_models)`,
  }),
  spendCap: (message: string): GatewayError => ({
    status: 429,
    type: 'rate_limit_error',
    code: 'spend_cap_reached',
    message,
    // Retrying cannot help until the day changes; the OpenAI and Anthropic SDKs honour this header.
    headers: { 'x-should-retry': 'false' },
  }),
  busy: (): GatewayError => ({
    status: 429,
    type: 'rate_limit_error',
    code: 'request_in_flight',
    message:
      'this run already has a request in flight; the gateway takes one at a time per run, so wait for its answer',
    headers: { 'x-should-retry': 'false' },
  }),
  timeout: (message: string): GatewayError => ({
    status: 504,
    type: 'timeout_error',
    code: 'upstream_timeout',
    message,
    // The gateway does not retry a provider that hangs (that would multiply the wait); neither may the
    // client: the OpenAI SDK retries a 504 twice by default.
    headers: { 'x-should-retry': 'false' },
  }),
  unreachable: (reason: string): GatewayError => ({
    status: 502,
    type: 'api_error',
    code: 'upstream_unreachable',
    message: `the LLM provider could not be reached: ${reason}`,
    // Sent after the gateway's own retries; a client retrying on top would multiply them.
    headers: { 'x-should-retry': 'false' },
  }),
  upstreamAuth: (status: number): GatewayError => ({
    status: 502,
    type: 'api_error',
    code: 'upstream_auth_failed',
    message: `the LLM provider rejected the host's API key (HTTP ${status}); the owner must check [provider].api_key_env`,
    headers: { 'x-should-retry': 'false' },
  }),
};
