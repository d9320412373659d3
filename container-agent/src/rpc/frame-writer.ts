/**
 * The peer's output side: one JSON frame per line, never over the frame limit, nothing after close. An
 * answer too large to send becomes an error answer, so the caller on the other side is not left waiting.
 */
import type { Writable } from 'node:stream';
import { JSONRPC_VERSION, RPC_ERROR_CODES } from '../protocol.ts';
import { MAX_ERROR_MESSAGE, truncate } from './frame-shape.ts';
import type { JsonRpcId, ReportProblem } from './peer-types.ts';

export interface FrameWriter {
  /** Serializes and writes one frame; false if it was too large to send (nothing is written then). */
  write(frame: object): boolean;
  sendError(id: JsonRpcId | null, code: number, message: string): void;
  sendResult(id: JsonRpcId, method: string, result: unknown): void;
}

export interface FrameWriterDeps {
  output: Writable;
  maxFrameBytes: number;
  /** After close nothing more is written (and a write counts as sent). */
  isClosed: () => boolean;
  report: ReportProblem;
}

export function createFrameWriter(deps: FrameWriterDeps): FrameWriter {
  const { output, maxFrameBytes, report } = deps;

  const write = (frame: object): boolean => {
    if (deps.isClosed()) return true;
    const line = JSON.stringify(frame);
    if (Buffer.byteLength(line, 'utf8') > maxFrameBytes) return false;
    output.write(line + '\n');
    return true;
  };

  const sendError = (id: JsonRpcId | null, code: number, message: string): void => {
    write({
      jsonrpc: JSONRPC_VERSION,
      id,
      error: { code, message: truncate(message, MAX_ERROR_MESSAGE) },
    });
  };

  const sendResult = (id: JsonRpcId, method: string, result: unknown): void => {
    if (write({ jsonrpc: JSONRPC_VERSION, id, result: result ?? null })) return;
    report({
      kind: 'frame-too-large',
      message: `the result of "${method}" is larger than ${maxFrameBytes} bytes`,
      method,
      id,
    });
    sendError(
      id,
      RPC_ERROR_CODES.frameTooLarge,
      `the result of "${method}" is larger than the ${maxFrameBytes}-byte frame limit`,
    );
  };

  return { write, sendError, sendResult };
}
