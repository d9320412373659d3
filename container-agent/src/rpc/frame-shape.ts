/** Checks on the shape of a decoded frame, shared by the peer's reader and its pending-call table. */
import type { JsonRpcId } from './peer-types.ts';

/** Error messages sent to the peer stay this short. */
export const MAX_ERROR_MESSAGE = 500;

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isValidId(value: unknown): value is JsonRpcId {
  return (
    (typeof value === 'number' && Number.isSafeInteger(value)) ||
    (typeof value === 'string' && value.length <= 128)
  );
}

export function isErrorObject(value: unknown): value is { code: number; message: string; data?: unknown } {
  return isRecord(value) && Number.isInteger(value.code) && typeof value.message === 'string';
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
