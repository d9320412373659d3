import path from 'node:path';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import type { Review } from '../gateway/index.ts';
import { createFinalFailures } from '../router/final-failures.ts';
import { createRunSignals } from '../router/run-signals.ts';
import { createCop } from '../security/cop/cop.ts';
import { createGatewayCopComplete } from '../security/cop/cop-gateway-complete.ts';
import { createBashLedger } from '../security/policies/bash-ledger.ts';
import { createBashPolicy } from '../security/policies/bash-policy.ts';
import { createHumanApproval } from '../security/policies/human-approval.ts';
import { createPrivateTextCheck } from '../security/private-text/private-text-check.ts';
import { createAttachmentReads } from '../security/taint/attachment-reads.ts';
import { createBashReports } from '../security/taint/bash-reports.ts';
import { initialRunTaint } from '../security/taint/initial-taint.ts';
import { createSecretReads } from '../security/taint/secret-reads.ts';
import { createTaintRegistry } from '../security/taint/taint.ts';
import type { RunnerFactoryDeps } from './host.ts';
import { lateBound } from './late-bound.ts';
import type { ProductionRunnerOptions } from './production-runner-options.ts';

/**
 * What decides about a run's risky actions, built once per host: the taint each run carries, the Cop, the
 * owner's approval, the bash gate and what a run has read (secrets, attachments, private text).
 */
export async function createRunSecurity(
  opts: ProductionRunnerOptions,
  { store, logger, approvals, config: source }: RunnerFactoryDeps,
) {
  const { config } = opts;
  const classifier = await createBashClassifier(resolveBashGateWasmPaths());
  const runSignals = createRunSignals();
  const groupOfRun = (runId: number) => {
    const run = store.runs.get(runId);
    return run ? store.groups.get(run.groupId) : undefined;
  };
  const taint = createTaintRegistry({
    initial: (runId) => {
      const group = groupOfRun(runId);
      return initialRunTaint(group, !!group && source.current().groups[group.id]?.contains_secrets === true);
    },
    onTainted: (runId, t) => {
      const group = groupOfRun(runId);
      if (group) store.groups.markTainted(group.id, t);
    },
  });
  // The Cop asks through the runtime's gateway, which exists only later: reviews happen in runs, after it
  // is set; one asked without it is refused (a flag), never sent around the gateway's accounting.
  const gatewayReview = lateBound<Review>();
  const cop = createCop({
    complete: createGatewayCopComplete(() => gatewayReview.get()),
    config: config.security.cop,
    logger: logger.child({ subsystem: 'cop' }),
  });
  const human = createHumanApproval({ approvals, signalFor: (runId) => runSignals.signal(runId), logger });
  const bashLedger = createBashLedger();
  const scanSecrets = (text: string) => opts.scanner.scan(text);
  const bashCheck = createBashPolicy({
    classifier,
    taint,
    cop,
    human,
    scanSecrets,
    audit: store.audit,
    ledger: bashLedger,
  });
  const secretReads = createSecretReads({ taint, audit: store.audit });
  return {
    runSignals,
    taint,
    gatewayReview,
    cop,
    human,
    scanSecrets,
    bashLedger,
    bashCheck,
    finalFailures: createFinalFailures(),
    privateText: createRunPrivateText(opts, store),
    secretReads,
    attachmentReads: createAttachmentReads({ taint, audit: store.audit }),
    bashRan: createBashReports({ classifier, ledger: bashLedger, taint, audit: store.audit, secretReads }),
  };
}

export type RunSecurity = Awaited<ReturnType<typeof createRunSecurity>>;

/** The private-text check over the group folders and the admin project, its budget's misses audited. */
function createRunPrivateText(opts: ProductionRunnerOptions, store: RunnerFactoryDeps['store']) {
  const adminProject = opts.adminProject ?? opts.projectRoot;
  // Folders of the admin project its container never sees (the data and config folders, hidden files)
  // or that hold no person's words (dependencies).
  const hiddenFromAdmin = [opts.paths.dataDir, opts.paths.configDir].map((p) =>
    path.relative(adminProject, p),
  );
  return createPrivateTextCheck({
    groupFolder: (groupId) => path.join(opts.paths.groupsDir, groupId),
    adminProject,
    adminProjectSkip: (rel) =>
      hiddenFromAdmin.includes(rel) ||
      path.basename(rel).startsWith('.') ||
      path.basename(rel) === 'node_modules',
    onLeftOut: (identity, what, leftOut) =>
      store.audit.record({
        runId: identity.runId,
        groupId: identity.group.id,
        operation: 'private_text.index',
        decision: 'left_out',
        reason: `${leftOut.length} files of ${what} are past the private-text index's budget and not checked`,
        details: { leftOut: leftOut.slice(0, 20) },
      }),
  });
}
