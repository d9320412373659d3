import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Dispatcher } from 'undici';
import { clientResponseHeaders } from './headers.ts';
import { createUsageTap } from './usage-tap.ts';
import type { PartialUsage } from '../spend/usage-extract.ts';
import { errorMessage } from '../../errors/error-message.ts';

type UpstreamBody = Dispatcher.ResponseData['body'];
type UpstreamHeaders = Dispatcher.ResponseData['headers'];

export type RelayEnd = 'complete' | 'client_gone' | 'upstream_failed';

export interface StreamRelayResult {
  end: RelayEnd;
  usage: PartialUsage | undefined;
  bytes: number;
  error?: string;
}

const MAX_JSON_FOR_USAGE = 16 * 1024 * 1024;
const MAX_BUFFERED_BODY = 8 * 1024 * 1024;

/**
 * Relays a successful upstream response as it arrives: headers are flushed at once, every chunk is written
 * when it comes (SSE stays unbuffered), backpressure from the client pauses the upstream read. Usage is
 * read off the bytes on the way through. On 'complete' the response is left open for the caller to end
 * once usage is settled (counted against the cap), so a client never sees a finished reply whose cost is not
 * yet counted.
 */
export async function relayStream(
  res: ServerResponse,
  upstream: { status: number; headers: UpstreamHeaders; body: UpstreamBody },
  options: { stripUsageOnlyChunks: boolean; signal: AbortSignal },
): Promise<StreamRelayResult> {
  const contentType =
    typeof upstream.headers['content-type'] === 'string' ? upstream.headers['content-type'] : undefined;
  const tap = createUsageTap({
    contentType,
    stripUsageOnlyChunks: options.stripUsageOnlyChunks,
    maxJsonBytes: MAX_JSON_FOR_USAGE,
  });
  res.writeHead(upstream.status, clientResponseHeaders(upstream.headers));
  // Headers go out in this turn of the event loop, so a client sees the answer begin while the model
  // thinks; when the first bytes of the body come in the same turn (they usually do: a provider sends its
  // first event right after its headers) they leave together in one write, which saves a socket write per
  // request (DESIGN.md, "LLM gateway").
  let started = false;
  const flushHeaders = setImmediate(() => {
    if (!started && !res.writableEnded) res.flushHeaders();
  });
  let bytes = 0;
  // The pieces of one upstream chunk leave in one write to the socket, as the chunk came. The socket is
  // corked, not the response: a corked ServerResponse reports backpressure from its own buffer but only
  // relays the socket's 'drain', so a wait for it could last forever.
  // Returns whether the client keeps up; only then is there nothing to wait for (no promise per chunk).
  const write = (pieces: readonly Buffer[]): boolean => {
    if (pieces.length > 0) started = true;
    if (pieces.length === 1) {
      const piece = pieces[0] as Buffer;
      bytes += piece.length;
      return piece.length === 0 || res.write(piece);
    }
    let drained = true;
    const socket = pieces.length > 1 ? res.socket : null;
    socket?.cork();
    for (const piece of pieces) {
      if (piece.length === 0) continue;
      bytes += piece.length;
      drained = res.write(piece) && drained;
    }
    socket?.uncork();
    return drained;
  };
  const drain = () => once(res, 'drain', { signal: options.signal });
  try {
    for await (const chunk of upstream.body as AsyncIterable<Buffer>) {
      if (!write(tap.chunk(chunk))) await drain();
    }
    const { tail, usage } = tap.finish();
    if (!write(tail)) await drain();
    return { end: 'complete', usage, bytes };
  } catch (error) {
    clearImmediate(flushHeaders);
    const { usage } = tap.finish();
    if (options.signal.aborted) return { end: 'client_gone', usage, bytes };
    // Headers (and maybe bytes) are out; cutting the connection is the only honest way to say "incomplete".
    res.destroy();
    upstream.body.destroy();
    return {
      end: 'upstream_failed',
      usage,
      bytes,
      error: errorMessage(error),
    };
  }
}

/** Reads a whole (small) upstream body, e.g. an error or the model list. Undefined when too large. */
export async function readUpstreamBody(
  body: UpstreamBody,
  limit = MAX_BUFFERED_BODY,
): Promise<Buffer | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return undefined;
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts, size);
}

export function sendBuffered(
  res: ServerResponse,
  status: number,
  upstreamHeaders: UpstreamHeaders,
  body: Buffer | string,
  extraHeaders: Record<string, string> = {},
): void {
  const headers = {
    ...clientResponseHeaders(upstreamHeaders),
    ...extraHeaders,
    'content-length': String(Buffer.byteLength(body)),
  };
  res.writeHead(status, headers);
  res.end(body);
}

/** Keeps only the allowed models in an OpenAI (`{data: [{id}]}`) or Anthropic model list. */
export function filterModelList(body: Buffer, allowed: ReadonlySet<string>): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as { data?: unknown }).data))
    return undefined;
  const list = parsed as { data: unknown[] } & Record<string, unknown>;
  const data = list.data.filter((entry) => {
    const id = typeof entry === 'object' && entry !== null ? (entry as { id?: unknown }).id : undefined;
    return typeof id === 'string' && allowed.has(id);
  });
  return JSON.stringify({ ...list, data });
}
