import type { ApprovalResult, ApprovalService } from '../../host/admin/approval-service.ts';
import type { RunContext } from '../../host/router/agent-runner.ts';

/** The parameters every in-process test runner asks the owner to approve. */
export const RISKY_PARAMS = { command: 'rm -rf build' };

/** What an in-process runner does when it needs the owner: one bash approval request for its run. */
export function askRiskyCommand(
  approvals: ApprovalService,
  ctx: Pick<RunContext, 'runId' | 'group'>,
): Promise<ApprovalResult> {
  return approvals.request({
    runId: ctx.runId,
    groupId: ctx.group.id,
    operation: 'bash',
    reason: 'the agent wants to run a risky command',
    params: RISKY_PARAMS,
  });
}
