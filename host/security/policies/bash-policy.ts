import type { BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import type { BashDecision, RunIdentity } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { BashLedger } from './bash-ledger.ts';
import type { Cop } from '../cop/cop.ts';
import type { Finding } from '../secrets/index.ts';
import { describeTaint, type TaintRegistry } from '../taint/taint.ts';

export interface HumanApproval {
  /** Asks the owner in the admin chat; resolves true only on an explicit approve. */
  ask(
    identity: RunIdentity,
    operation: string,
    reason: string,
    params: Record<string, unknown>,
  ): Promise<boolean>;
}

export interface BashPolicyDeps {
  /** The host's own classifier: the container's verdict is never taken on trust. */
  classifier: BashClassifier;
  taint: TaintRegistry;
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  scanSecrets(text: string): Promise<Finding[]>;
  audit: AuditStore;
  /** Where allowed commands wait for the agent's report that it ran them (see bash-reports.ts). */
  ledger?: BashLedger;
}

/**
 * Decides a bash command the in-container gate escalated, from the run's taint:
 * none → allow; corruption → Cop (a flag goes to a human); corruption + secret → human for network
 * commands. A secret in the command always goes to a human. An allowed network command taints the run,
 * because what it fetched is now in the agent's context. Every path ends in an audited, typed decision.
 */
export function createBashPolicy(deps: BashPolicyDeps) {
  const { classifier, taint, cop, human, audit } = deps;
  return async function bashCheck(identity: RunIdentity, command: string): Promise<BashDecision> {
    const verdict = classifier.classify(command);
    const t = taint.get(identity.runId);
    const decide = (decision: 'allow' | 'deny', reason: string, approver?: string): BashDecision => {
      audit.record({
        runId: identity.runId,
        groupId: identity.group.id,
        operation: 'bash',
        decision: decision === 'allow' ? 'allowed' : 'denied',
        taint: describeTaint(t),
        reason,
        approver: approver ?? null,
        details: { command: command.slice(0, 2000), class: verdict.class, network: verdict.network },
      });
      if (decision === 'allow' && verdict.network) taint.markCorrupted(identity.runId);
      if (decision === 'allow') deps.ledger?.grant(identity.runId, command);
      return { decision, reason };
    };
    const askHuman = async (why: string) =>
      (await human.ask(identity, 'bash', why, { command }))
        ? decide('allow', `approved by the owner (${why})`, 'owner')
        : decide('deny', `not approved by the owner (${why})`);

    if (verdict.class === 'local') return decide('allow', 'runs locally: no program or network reach');
    const findings = await deps.scanSecrets(command);
    if (findings.length > 0) return askHuman(`the command contains a secret (${findings[0]?.rule})`);
    if (!t.corruption) return decide('allow', `untainted run (${verdict.reason})`);
    if (t.secret && verdict.network)
      return askHuman('a run that read secrets and untrusted content wants the network');
    const review = await cop.review({
      kind: 'bash_command',
      operation: 'bash',
      params: { command },
      taint: t,
    });
    audit.record({
      runId: identity.runId,
      groupId: identity.group.id,
      operation: 'bash.cop',
      decision: review.flagged ? 'flagged' : 'passed',
      taint: describeTaint(t),
      reason: review.reason.slice(0, 1000),
    });
    if (review.flagged) return askHuman(`the Cop flagged it: ${review.reason.slice(0, 300)}`);
    return decide('allow', `the Cop passed it (${verdict.reason})`);
  };
}
