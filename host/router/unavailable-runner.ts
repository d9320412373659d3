import type { AgentRunner } from './agent-runner.ts';

/**
 * Stands in when agents cannot run at all (no Docker engine, no image): every run ends at once,
 * not retryable, so the group is told why instead of waiting through retries.
 */
export function createUnavailableRunner(reason: string): AgentRunner {
  return {
    start() {
      const accepted = Promise.reject(new Error(reason));
      accepted.catch(() => undefined); // nobody may be listening; the rejection is the answer, not an error
      return {
        accepted,
        input: async () => false,
        stop() {},
        done: Promise.resolve({ ok: false, reason, retryable: false }),
      };
    },
  };
}
