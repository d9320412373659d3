import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { clientResponseHeaders } from './headers.ts';
import { createUsageTap } from './usage-tap.ts';
import { readBody, type UpstreamBody } from './upstream-dispatch.ts';
import type { PartialUsage } from '../spend/usage-extract.ts';

type UpstreamHeaders = IncomingHttpHeaders;

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
 * Relays a successful upstream response as it arrives: headers leave in this turn of the event loop, every
 * chunk is written from the upstream parser's callback as it comes (SSE stays unbuffered), and a client that
 * does not keep up pauses the upstream read until its 'drain'. Usage is read off the bytes on the way through.
 * `settle` runs once the relay has ended, whichever way; on 'complete' the response is ended only after it,
 * so a client never sees a finished reply whose cost is not yet counted. Meanwhile the socket is corked:
 * the last bytes and the end of the response leave in one write.
 */
export function relayStream(
  res: ServerResponse,
  upstream: { status: number; headers: UpstreamHeaders; body: UpstreamBody },
  options: {
    stripUsageOnlyChunks: boolean;
    signal: AbortSignal;
    settle: (result: StreamRelayResult) => Promise<void>;
  },
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
  // Returns whether the client keeps up.
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
  const relayed = new Promise<StreamRelayResult>((resolve) => {
    const resume = () => upstream.body.resume();
    res.on('drain', resume);
    const done = (result: StreamRelayResult) => {
      res.off('drain', resume);
      // Undone once the response is ended, below.
      if (result.end === 'complete') res.socket?.cork();
      resolve(result);
    };
    // What the body holds already (often all of a short answer) leaves in one write with the headers.
    const socket = res.socket;
    socket?.cork();
    upstream.body.consume({
      data: (chunk) => write(tap.chunk(chunk)),
      end: () => {
        const { tail, usage } = tap.finish();
        write(tail);
        done({ end: 'complete', usage, bytes });
      },
      error: (error) => {
        clearImmediate(flushHeaders);
        const { usage } = tap.finish();
        if (options.signal.aborted) {
          done({ end: 'client_gone', usage, bytes });
          return;
        }
        // Headers (and maybe bytes) are out; cutting the connection is the only honest way to say "incomplete".
        res.destroy();
        done({ end: 'upstream_failed', usage, bytes, error: error.message });
      },
    });
    socket?.uncork();
  });
  return relayed.then(async (result) => {
    try {
      await options.settle(result);
    } finally {
      if (result.end === 'complete') {
        res.end();
        res.socket?.uncork();
      }
    }
    return result;
  });
}

/** Reads a whole (small) upstream body, e.g. an error or the model list. Undefined when too large. */
export function readUpstreamBody(body: UpstreamBody, limit = MAX_BUFFERED_BODY): Promise<Buffer | undefined> {
  return readBody(body, limit);
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
