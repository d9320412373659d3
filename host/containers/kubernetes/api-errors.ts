import { ApiException } from '@kubernetes/client-node';
import { errorMessage } from '../../errors/error-message.ts';

/** "HTTP 422 (pods … is invalid: …)" or the transport's own words. */
export function describeApiError(err: unknown): string {
  if (err instanceof ApiException) {
    let message = '';
    try {
      const body: unknown = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
      if (body && typeof body === 'object' && 'message' in body) message = String(body.message);
    } catch {
      // Not a Status object: the code alone says enough.
    }
    return `HTTP ${err.code}${message ? ` (${message})` : ''}`;
  }
  return errorMessage(err);
}
