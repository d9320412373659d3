import type { CloseFailure } from './closer-stack.ts';
import { errorMessage } from '../errors/error-message.ts';

/**
 * A start that failed: which step, why, and whether taking down what had come up went cleanly. The cause is
 * the step's own error (a held lock, a socket in use), so callers can still tell those apart.
 */
export class HostStartError extends Error {
  constructor(
    readonly step: string,
    override readonly cause: unknown,
    readonly closeFailures: readonly CloseFailure[],
  ) {
    const leftovers = closeFailures
      .map((f) => `\n  could not close ${f.name}: ${errorMessage(f.error)}`)
      .join('');
    super(`Carapace could not start: ${step} failed: ${errorMessage(cause)}${leftovers}`, { cause });
    this.name = 'HostStartError';
  }
}
