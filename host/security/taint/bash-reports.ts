import type { BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import type { RunIdentity } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { BashLedger } from '../policies/bash-ledger.ts';
import type { SecretReads } from './secret-reads.ts';
import { describeTaint, type TaintRegistry } from './taint.ts';

export interface BashReport {
  command: string;
  via: 'local' | 'host';
  reason: string;
}

export type BashReportOutcome = { missed: false } | { missed: true; reason: string };

export interface BashReportsDeps {
  /** The host's own classifier, the same parser and rules as the container's. */
  classifier: BashClassifier;
  ledger: BashLedger;
  taint: TaintRegistry;
  audit: AuditStore;
  /** Secret-taints a run whose command may read inside a mount that held secrets. */
  secretReads: Pick<SecretReads, 'commandRan'>;
}

/**
 * Every command a run executes is reported before it runs (`bash.ran`) and audited here. The host
 * classifies it again: a command the container ran locally that the host escalates is a gate miss, and
 * so is one run "with the host's leave" that the host never gave. A miss stops the run (the caller does
 * that); nothing in the report is believed.
 */
export function createBashReports(deps: BashReportsDeps) {
  const { classifier, ledger, taint, audit, secretReads } = deps;
  return function bashRan(identity: RunIdentity, report: BashReport): BashReportOutcome {
    const verdict = classifier.classify(report.command);
    const allowedByHost = verdict.class === 'escalate' && ledger.consume(identity.runId, report.command);
    const miss =
      verdict.class === 'local'
        ? null
        : allowedByHost
          ? null
          : report.via === 'local'
            ? `the container ran it locally, but the host's gate escalates it (${verdict.reason})`
            : `the container ran it without the host's leave (${verdict.reason})`;
    // What an allowed network command fetched is in the agent's context now (bash_check marked it too).
    if (miss === null && verdict.network) taint.markCorrupted(identity.runId);
    audit.record({
      runId: identity.runId,
      groupId: identity.group.id,
      operation: miss === null ? 'bash.ran' : 'bash.gate_miss',
      decision: miss === null ? 'ran' : 'stopped',
      taint: describeTaint(taint.get(identity.runId)),
      reason: (miss ?? (verdict.class === 'local' ? 'local' : 'allowed by the host')).slice(0, 1000),
      details: {
        command: report.command.slice(0, 2000),
        via: report.via,
        class: verdict.class,
        network: verdict.network,
      },
    });
    if (miss !== null) return { missed: true, reason: `gate miss: ${miss}` };
    secretReads.commandRan(identity, report.command, verdict);
    return { missed: false };
  };
}
