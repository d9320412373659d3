import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { request, type Dispatcher } from 'undici';
import type { KeyOwner } from '../key-registry.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { credentialUpstream, type CredentialConfig } from './credential-config.ts';
import { createRedactingStream, redactText } from './redacting-stream.ts';
import type { CredentialRouteDeps } from './credential-use.ts';

/** Client headers that never reach the upstream: the run key, the connection's own, and who the client is. */
const DROPPED_REQUEST_HEADERS = new Set([
  'host',
  'authorization',
  'proxy-authorization',
  'cookie',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'content-length',
  'accept-encoding',
  'forwarded',
  'x-real-ip',
  // Some APIs take the method from these headers: the allowlist judged the request line's method.
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);
const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'set-cookie',
  'set-cookie2',
  'www-authenticate',
  'proxy-authenticate',
  'trailer',
  'upgrade',
]);

function upstreamRequestHeaders(
  client: IncomingHttpHeaders,
  credentialHeaderName: string,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(client)) {
    const lower = name.toLowerCase();
    if (value === undefined || DROPPED_REQUEST_HEADERS.has(lower) || lower === credentialHeaderName) continue;
    if (lower.startsWith('proxy-') || lower.startsWith('x-forwarded-')) continue;
    headers[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  // The answer is read for echoes of the secret, which a compressed body would hide.
  headers['accept-encoding'] = 'identity';
  return headers;
}

function clientResponseHeaders(
  upstream: IncomingHttpHeaders,
  secrets: readonly Buffer[],
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream)) {
    const lower = name.toLowerCase();
    if (value === undefined || DROPPED_RESPONSE_HEADERS.has(lower)) continue;
    headers[lower] = Array.isArray(value)
      ? value.map((v) => redactText(v, secrets))
      : redactText(value, secrets);
  }
  return headers;
}

/**
 * Sends an allowed request to the credential's upstream with the secret's header, and streams the answer
 * back with every echo of the secret replaced (headers included). The audit row counts what the container got.
 */
export async function relayCredentialRequest(
  deps: Pick<CredentialRouteDeps, 'dispatcher' | 'logger' | 'record' | 'signalFor'>,
  req: IncomingMessage,
  res: ServerResponse,
  owner: KeyOwner,
  credential: CredentialConfig,
  call: { method: string; path: string; query: string; body: Buffer | undefined },
  headerName: string,
  headerValue: string,
  secrets: readonly Buffer[],
  row: { credential: string; method: string; path: string },
): Promise<void> {
  const upstream = credentialUpstream(credential);
  const basePath = upstream.pathname.replace(/\/$/, '');
  const controller = new AbortController();
  const signal = AbortSignal.any([controller.signal, deps.signalFor(owner)]);
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const headers = upstreamRequestHeaders(req.headers, headerName);
  headers[headerName] = headerValue;
  const answer = await request(`${upstream.origin}${basePath}${call.path}${call.query}`, {
    method: call.method as Dispatcher.HttpMethod,
    headers,
    ...(call.body === undefined ? {} : { body: call.body }),
    dispatcher: deps.dispatcher,
    signal,
  });
  let bytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  res.writeHead(answer.statusCode, clientResponseHeaders(answer.headers, secrets));
  try {
    await pipeline(answer.body, createRedactingStream(secrets), counter, res);
  } catch (error) {
    // The container went away, or the upstream broke off: the answer stops where it was.
    res.destroy();
    deps.logger.warn(
      { credential: row.credential, err: redactText(errorMessage(error), secrets) },
      'gateway: a credential answer was cut off',
    );
  } finally {
    deps.record(owner, { ...row, status: answer.statusCode, bytes });
  }
}
