/**
 * The peer's input side, one decoded line at a time: a frame that is not a single JSON-RPC 2.0 object is
 * answered with the protocol's error (with its id where one can be read) and goes no further; a request
 * goes to the handlers, a response to the pending-call table.
 */
import { JSONRPC_VERSION, RPC_ERROR_CODES } from '../protocol.ts';
import { errorMessage } from './errors.ts';
import { isRecord, isValidId } from './frame-shape.ts';
import type { FrameWriter } from './frame-writer.ts';
import type { OversizeReport } from './line-decoder.ts';
import type { JsonRpcId, ReportProblem, RpcLogger } from './peer-types.ts';
import type { DispatchRequest } from './request-dispatch.ts';

export interface FrameRouterDeps {
  maxFrameBytes: number;
  writer: FrameWriter;
  report: ReportProblem;
  dispatch: DispatchRequest;
  /** A response frame (it has "result" or "error"). */
  settle: (frame: Record<string, unknown>) => void;
  logger?: RpcLogger;
}

export interface FrameRouter {
  onFrame(line: string): void;
  /** A line over the frame limit, dropped by the decoder. */
  onOversize(overflow: OversizeReport): void;
}

export function createFrameRouter(deps: FrameRouterDeps): FrameRouter {
  const { writer, report, maxFrameBytes } = deps;

  const refuse = (id: JsonRpcId | null, problem: string, answer: string): void => {
    report({ kind: 'invalid-request', message: problem, id });
    writer.sendError(id, RPC_ERROR_CODES.invalidRequest, answer);
  };

  const onRequest = (frame: Record<string, unknown>): void => {
    if (typeof frame.method !== 'string') {
      const id = isValidId(frame.id) ? frame.id : null;
      refuse(id, 'a request whose method is not a string', 'invalid request: "method" must be a string');
      return;
    }
    if ('id' in frame && !isValidId(frame.id)) {
      refuse(null, 'a request with an invalid id', 'invalid request: "id" must be a string or an integer');
      return;
    }
    const method = frame.method;
    const id = 'id' in frame ? (frame.id as JsonRpcId) : null;
    void deps.dispatch(id, method, frame.params).catch((error: unknown) => {
      deps.logger?.warn({ method, error: errorMessage(error) }, 'json-rpc: request handling failed');
    });
  };

  const onFrame = (line: string): void => {
    let frame: unknown;
    try {
      frame = JSON.parse(line);
    } catch {
      report({ kind: 'parse-error', message: 'a frame that is not valid JSON', id: null });
      writer.sendError(null, RPC_ERROR_CODES.parseError, 'parse error: the frame is not valid JSON');
      return;
    }
    if (Array.isArray(frame)) {
      refuse(null, 'a batch frame (not supported)', 'invalid request: batches are not supported');
      return;
    }
    if (!isRecord(frame) || frame.jsonrpc !== JSONRPC_VERSION) {
      const id = isRecord(frame) && isValidId(frame.id) ? frame.id : null;
      refuse(
        id,
        'a frame that is not a JSON-RPC 2.0 object',
        'invalid request: expected a JSON object with "jsonrpc": "2.0"',
      );
      return;
    }
    if ('method' in frame) {
      onRequest(frame);
      return;
    }
    if ('result' in frame || 'error' in frame) {
      deps.settle(frame);
      return;
    }
    const id = isValidId(frame.id) ? frame.id : null;
    refuse(
      id,
      'a frame that is neither a request nor a response',
      'invalid request: expected "method", "result" or "error"',
    );
  };

  const onOversize = (overflow: OversizeReport): void => {
    const id = idFromPrefix(overflow.prefix);
    report({
      kind: 'frame-too-large',
      message: `a frame of ${overflow.bytes} bytes (limit ${maxFrameBytes}) was dropped`,
      id,
    });
    // A request whose id we can read gets its error, so its caller does not wait for a timeout.
    writer.sendError(
      id,
      RPC_ERROR_CODES.frameTooLarge,
      `frame too large: ${overflow.bytes} bytes, the limit is ${maxFrameBytes}`,
    );
  };

  return { onFrame, onOversize };
}

/**
 * Reads the id of a dropped frame from its first bytes, but only in the canonical layout this peer
 * writes ({"jsonrpc":"2.0","id":…} or {"id":…}), so an "id" nested in params is never mistaken for it.
 */
function idFromPrefix(prefix: string): JsonRpcId | null {
  const match =
    /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,15}|"[^"\\]{0,128}")\s*[,}]/.exec(prefix);
  if (!match?.[1]) return null;
  const raw = match[1];
  return raw.startsWith('"') ? raw.slice(1, -1) : Number(raw);
}
