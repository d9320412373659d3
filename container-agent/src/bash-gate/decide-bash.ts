/**
 * Decides whether a bash command may run: locally when the classifier says so, otherwise only on the
 * host's typed "allow". A denial always blocks. When the host never answers (timeout, connection gone)
 * the command is blocked unless the operator configured "allow" for that case; an error answer from the
 * host is an answer, and blocks.
 */
import type { HostClient } from '../ipc/host-client.ts';
import { LIMITS } from '../protocol.ts';
import { isNoAnswerError } from '../rpc/errors.ts';
import type { BashClassifierSource } from './fail-closed-classifier.ts';
import { errorMessage } from '../rpc/errors.ts';

export type BashDecision =
  | { run: true; via: 'local' | 'host' | 'unreachable-host-allowed'; reason: string }
  | { run: false; reason: string };

export interface DecideBashOptions {
  classifier: BashClassifierSource;
  host: HostClient;
  onGateError: 'block' | 'allow';
  checkTimeoutMs: number;
  signal: AbortSignal;
}

export async function decideBash(command: string, options: DecideBashOptions): Promise<BashDecision> {
  const classification = (await options.classifier).classify(command);
  if (classification.class === 'local') return { run: true, via: 'local', reason: classification.reason };
  if (command.length > LIMITS.command) {
    return {
      run: false,
      reason: `the command is longer than ${LIMITS.command} characters, too long to be reviewed`,
    };
  }
  const localReason = classification.reason.slice(0, LIMITS.reason);
  try {
    const answer = await options.host.request(
      'security.bash_check',
      { command, localReason },
      { timeoutMs: options.checkTimeoutMs, signal: options.signal },
    );
    if (answer.decision === 'allow') return { run: true, via: 'host', reason: answer.reason };
    return { run: false, reason: answer.reason || 'denied by the host' };
  } catch (error) {
    const detail = errorMessage(error);
    if (options.onGateError === 'allow' && isNoAnswerError(error) && !options.signal.aborted) {
      return {
        run: true,
        via: 'unreachable-host-allowed',
        reason: `the host could not be asked (${detail})`,
      };
    }
    return { run: false, reason: `the host's permission could not be obtained (${detail})` };
  }
}
