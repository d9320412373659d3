import fs from 'node:fs';
import { adminGroupId } from '../admin/admin-group.ts';
import { createConfigFileStore } from '../config/config-file-store.ts';
import { createConfigProposals } from '../config/config-proposals.ts';
import { configReferenceProblems } from '../config/config-references.ts';
import { reloadOnRestart } from '../config/config-reload.ts';
import { EXAMPLE_CONFIG_FILE } from '../config/project-files.ts';
import { createCredentialPolicy } from '../security/policies/credential-policy.ts';
import { createMessagePolicy } from '../security/policies/message-policy.ts';
import { redactFindings } from '../security/secrets/redact-findings.ts';
import type { AgentRuntimeDeps } from './agent-runtime.ts';
import type { RunnerFactoryDeps } from './host.ts';
import type { ProductionRunnerOptions } from './production-runner-options.ts';
import type { RunSecurity } from './run-security.ts';
import type { RunServices } from './run-services.ts';

/** What the runtime asks before each risky action of a run: the one place the policies are put together. */
export function createRunPolicy(
  opts: ProductionRunnerOptions,
  { store, reloadConfig = reloadOnRestart }: RunnerFactoryDeps,
  security: RunSecurity,
  services: RunServices,
): AgentRuntimeDeps['policy'] {
  const { taint, cop, human, scanSecrets, privateText, secretReads, attachmentReads, finalFailures } =
    security;
  return {
    bashCheck: security.bashCheck,
    bashRan: security.bashRan,
    fileRead: (identity, report) => {
      secretReads.fileRead(identity, report);
      attachmentReads.fileRead(identity, report);
    },
    callService: services.callService,
    reviewMessage: createMessagePolicy({
      scanSecrets,
      taint,
      cop,
      human,
      audit: store.audit,
      onDenied: (runId) => finalFailures.withheld(runId, 'the owner did not approve its message'),
      privateText,
    }),
    reviewMutation: services.reviewMutation,
    config: createConfigProposals({
      files: createConfigFileStore({ configFile: opts.paths.configFile }),
      exampleText: fs.readFileSync(EXAMPLE_CONFIG_FILE, 'utf8'),
      referenceProblems: (before, after) =>
        configReferenceProblems(
          before,
          after,
          (id) => store.groups.get(id) !== undefined,
          adminGroupId(store.groups),
        ),
      redactText: (text) => redactFindings(text, opts.scanner),
      cop,
      human,
      taint,
      audit: store.audit,
      reload: reloadConfig,
    }),
  };
}

/** Host-injected credentials: the policy that decides each use and where the secrets come from. */
export function createRunCredentials(
  opts: ProductionRunnerOptions,
  { store }: RunnerFactoryDeps,
  security: RunSecurity,
): AgentRuntimeDeps['credentials'] {
  const { taint, cop, human, scanSecrets, privateText, runSignals } = security;
  return {
    policy: {
      ...createCredentialPolicy({
        taint,
        cop,
        human,
        scanSecrets,
        privateText,
        audit: store.audit,
        identityOf: (owner) => {
          const run = store.runs.get(Number(owner.runId));
          const group = store.groups.get(owner.groupId);
          return run && group && run.groupId === group.id
            ? { runId: run.id, group, secretMounts: [] }
            : undefined;
        },
      }),
      signalFor: (owner) => runSignals.signal(Number(owner.runId)),
    },
    secret: (name) => opts.secrets.get(name),
  };
}
