/**
 * Decides whether a bash command may run: locally when the classifier says so, otherwise only on the
 * host's typed "allow". A denial, an error answer and no answer at all (timeout, connection gone) block:
 * there is no setting that runs an escalated command the host did not allow.
 */
import type { HostClient } from '../ipc/host-client.ts';
import { LIMITS } from '../protocol.ts';
import type { BashClassifierSource } from './fail-closed-classifier.ts';
import { errorMessage } from '../rpc/errors.ts';

export type BashDecision =
  { run: true; via: 'local' | 'host'; reason: string } | { run: false; reason: string };

export interface DecideBashOptions {
  classifier: BashClassifierSource;
  host: HostClient;
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
    return { run: false, reason: `the host's permission could not be obtained (${detail})` };
  }
}
