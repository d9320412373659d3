import type { BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import type { BashDecision, RunIdentity } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { BashLedger } from './bash-ledger.ts';
import type { Cop } from '../cop/cop.ts';
import type { Finding } from '../secrets/index.ts';
import type { TaintRegistry } from '../taint/taint.ts';
import { copThenOwner, createDecisionRecorder, type HumanApproval } from './reviewed-decision.ts';

export type { HumanApproval } from './reviewed-decision.ts';

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
  const { classifier, taint, human, audit } = deps;
  return async function bashCheck(identity: RunIdentity, command: string): Promise<BashDecision> {
    const verdict = classifier.classify(command);
    const t = taint.get(identity.runId);
    const record = createDecisionRecorder(audit, identity, 'bash', t, () => ({
      command: command.slice(0, 2000),
      class: verdict.class,
      network: verdict.network,
    }));
    const decide = (decision: 'allow' | 'deny', reason: string, approver?: string): BashDecision => {
      record(decision === 'allow' ? 'allowed' : 'denied', reason, approver);
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
    const reviewed = await copThenOwner(
      deps,
      identity,
      { kind: 'bash_command', operation: 'bash', params: { command }, taint: t },
      { ownerParams: { command }, flagged: (reason) => `the Cop flagged it: ${reason}` },
    );
    if (reviewed.outcome === 'approved')
      return decide('allow', `approved by the owner (${reviewed.why})`, 'owner');
    if (reviewed.outcome === 'denied') return decide('deny', `not approved by the owner (${reviewed.why})`);
    return decide('allow', `the Cop passed it (${verdict.reason})`);
  };
}
