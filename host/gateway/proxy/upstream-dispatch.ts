import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';

/** Where an upstream body's chunks go, in order, once someone consumes it. */
export interface BodySink {
  /** One chunk; false asks for the upstream read to pause until the body's resume(). */
  data(chunk: Buffer): boolean;
  end(): void;
  error(error: Error): void;
}

/**
 * An upstream response body as undici's parser hands it out: no stream in between. Chunks that came before
 * a consumer did are held (the read pauses past HELD_BYTES), then handed over at once.
 */
export interface UpstreamBody {
  /** Hands every chunk to `sink`; only one consumer, once. */
  consume(sink: BodySink): void;
  /** The sink can take more after its data() said no. */
  resume(): void;
  /** Drops the connection; a consumer hears error(). */
  destroy(reason?: Error): void;
}

export type UpstreamHead =
  | { kind: 'response'; status: number; headers: IncomingHttpHeaders; body: UpstreamBody }
  | { kind: 'failed'; error: Error };

/** What may pile up between the response's headers and its consumer before the read pauses. */
const HELD_BYTES = 256 * 1024;

interface Controller {
  readonly paused: boolean;
  abort(reason: Error): void;
  pause(): void;
  resume(): void;
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('the client went away');
}

/**
 * Sends one request through the dispatcher's handler interface and settles at the response's headers (or
 * the failure before them). The relay writes each chunk from the parser's callback straight to its sink,
 * with backpressure as the parser's pause and resume: `undici.request()` put a Readable, an async
 * iterator and a promise per chunk between them, which was most of what the gateway spent beyond a bare
 * proxy on a small request (DESIGN.md, "LLM gateway"). `signal` aborts the request at any stage.
 */
export function dispatchUpstream(
  dispatcher: Dispatcher,
  options: Dispatcher.DispatchOptions,
  signal: AbortSignal,
): Promise<UpstreamHead> {
  return new Promise((resolve) => {
    let controller: Controller | undefined;
    let answered = false;
    let sink: BodySink | undefined;
    // Chunks not yet taken by the sink: before it came, or after it asked for a pause.
    let held: Buffer[] = [];
    let heldBytes = 0;
    let sinkWaits = false;
    // How the body finished while chunks were still held, or before anyone consumed it.
    let finished: { error: Error | undefined } | undefined;
    let closed = false;

    const onAbort = () => controller?.abort(abortError(signal));
    const close = () => {
      closed = true;
      signal.removeEventListener('abort', onAbort);
    };

    // Hands held chunks over until the sink asks for a pause; then the end, if it came.
    const pump = () => {
      if (sink === undefined) return;
      while (held.length > 0 && !sinkWaits) {
        const chunk = held.shift() as Buffer;
        heldBytes -= chunk.length;
        sinkWaits = !sink.data(chunk);
      }
      if (held.length > 0 || sinkWaits) return;
      if (finished !== undefined) {
        const { error } = finished;
        finished = undefined;
        if (error === undefined) sink.end();
        else sink.error(error);
      } else if (controller?.paused === true) controller.resume();
    };

    const body: UpstreamBody = {
      consume(next) {
        if (sink !== undefined) throw new Error('an upstream body has one consumer');
        sink = next;
        pump();
      },
      resume() {
        sinkWaits = false;
        pump();
      },
      destroy(reason) {
        if (closed && finished === undefined) return;
        // Chunks held for a consumer that no longer wants them.
        held = [];
        heldBytes = 0;
        if (closed) finished = { error: reason ?? new Error('upstream body destroyed') };
        else controller?.abort(reason ?? new Error('upstream body destroyed'));
        pump();
      },
    };

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(started) {
        controller = started;
        if (signal.aborted) started.abort(abortError(signal));
      },
      onResponseStart(_controller, status, headers) {
        // 1xx informational answers come before the real one.
        if (status < 200 || answered) return;
        answered = true;
        resolve({ kind: 'response', status, headers, body });
      },
      onResponseData(current, chunk) {
        if (sink !== undefined && held.length === 0 && !sinkWaits) {
          sinkWaits = !sink.data(chunk);
          if (sinkWaits) current.pause();
          return;
        }
        held.push(chunk);
        heldBytes += chunk.length;
        if (sinkWaits || heldBytes > HELD_BYTES) current.pause();
      },
      onResponseEnd() {
        close();
        finished = { error: undefined };
        pump();
      },
      onResponseError(_controller, error) {
        close();
        if (!answered) {
          answered = true;
          resolve({ kind: 'failed', error });
          return;
        }
        // What was held is dropped: the stream is cut either way, and the sink says so.
        held = [];
        heldBytes = 0;
        sinkWaits = false;
        finished = { error };
        pump();
      },
    };

    if (signal.aborted) {
      resolve({ kind: 'failed', error: abortError(signal) });
      return;
    }
    signal.addEventListener('abort', onAbort);
    try {
      dispatcher.dispatch(options, handler);
    } catch (error) {
      close();
      resolve({ kind: 'failed', error: error instanceof Error ? error : new Error(String(error)) });
    }
  });
}

/** Reads a whole (small) body; undefined when it is larger than `limit` (the connection is then dropped). */
export function readBody(body: UpstreamBody, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    body.consume({
      data(chunk) {
        if (over) return true;
        size += chunk.length;
        if (size > limit) {
          over = true;
          parts.length = 0;
          body.destroy();
          return true;
        }
        parts.push(chunk);
        return true;
      },
      end: () => resolve(over ? undefined : Buffer.concat(parts, size)),
      error: (error) => (over ? resolve(undefined) : reject(error)),
    });
  });
}
