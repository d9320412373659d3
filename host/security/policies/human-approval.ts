import type { Logger } from '../../logging/logger.ts';
import type { ApprovalService } from '../../admin/approval-service.ts';
import type { HumanApproval } from './bash-policy.ts';

export interface HumanApprovalDeps {
  approvals: Pick<ApprovalService, 'request' | 'consume'>;
  /** Aborts when the run ends: an approval granted later would act for nobody. */
  signalFor(runId: number): AbortSignal;
  logger: Pick<Logger, 'error'>;
}

/**
 * The owner's approval as the policies ask for it. Approved means: the owner said so in an admin chat, for
 * exactly these parameters, and this is the one use of that decision. Everything else is a deny: a denial,
 * an expiry (timeout, the run ended, the host stopped), an approval already used or for other parameters,
 * and a request that failed to be asked at all.
 */
export function createHumanApproval({ approvals, signalFor, logger }: HumanApprovalDeps): HumanApproval {
  return {
    async ask(identity, operation, reason, params) {
      try {
        const r = await approvals.request({
          runId: identity.runId,
          groupId: identity.group.id,
          operation,
          reason,
          params,
          signal: signalFor(identity.runId),
        });
        return r.outcome === 'approved' && approvals.consume(r.id, params);
      } catch (err) {
        logger.error({ err }, 'approval request failed; treating it as denied');
        return false;
      }
    },
  };
}
