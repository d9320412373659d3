import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Docker from 'dockerode';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import type { SecretSource } from '../config/secrets.ts';
import type { HostConfig } from '../config/schema.ts';
import type { CarapacePaths } from '../config/paths.ts';
import { createConfigFileStore } from '../config/config-file-store.ts';
import { reloadOnRestart } from '../config/config-reload.ts';
import { adminGroupId } from '../admin/admin-group.ts';
import { createAgentRuntime } from './agent-runtime.ts';
import type { HostDeps, RunnerFactoryDeps } from './host.ts';
import { EXAMPLE_CONFIG_FILE } from '../config/project-files.ts';
import { createMessagePolicy } from '../security/policies/message-policy.ts';
import { createMutationReview } from '../security/policies/mutation-review.ts';
import { createConfigProposals } from '../config/config-proposals.ts';
import { configReferenceProblems } from '../config/config-references.ts';
import { redactFindings } from '../security/secrets/redact-findings.ts';
import { createServicePolicy } from '../security/policies/service-policy.ts';
import { createCredentialPolicy } from '../security/policies/credential-policy.ts';
import { assertStartableConfig, createHostServiceRegistry, serviceGrants } from '../config/service-grants.ts';
import { createBashLedger } from '../security/policies/bash-ledger.ts';
import { createBashPolicy } from '../security/policies/bash-policy.ts';
import { createHumanApproval } from '../security/policies/human-approval.ts';
import { initialRunTaint } from '../security/taint/initial-taint.ts';
import { createBashReports } from '../security/taint/bash-reports.ts';
import { createCop } from '../security/cop/cop.ts';
import { createSecretReads } from '../security/taint/secret-reads.ts';
import { createPrivateTextCheck } from '../security/private-text/private-text-check.ts';
import { createAttachmentReads } from '../security/taint/attachment-reads.ts';
import { createGatewayCopComplete } from '../security/cop/cop-gateway-complete.ts';
import { lateBound } from './late-bound.ts';
import type { Review } from '../gateway/index.ts';
import type { SecretScanner } from '../security/secrets/index.ts';
import { createFinalFailures } from '../router/final-failures.ts';
import { createRunSignals } from '../router/run-signals.ts';
import { createTaintRegistry } from '../security/taint/taint.ts';
import { createMcpServerContainers } from '../containers/run/mcp-server-container.ts';
import { createMcpServices } from '../services/mcp/mcp-services.ts';
import { createToolCatalogue } from '../services/mcp/mcp-catalogue.ts';
import { MCP_DEFAULTS } from '../services/mcp/mcp-config.ts';
import { assertRunnerAvailable } from '../containers/kubernetes/runner-choice.ts';

export interface ProductionRunnerOptions {
  config: HostConfig;
  paths: CarapacePaths;
  projectRoot: string;
  /** The project the admin group sees read-only (default: `projectRoot`). */
  adminProject?: string;
  secrets: SecretSource;
  scanner: SecretScanner;
  onProgress(line: string): void;
}

/**
 * The runner `carapace start` uses: real containers behind the real security policy. Only real parts are
 * built here; test doubles never are.
 */
export function productionRunnerFactory(opts: ProductionRunnerOptions): HostDeps['createRunner'] {
  return async ({
    store,
    logger,
    approvals,
    scheduler,
    enqueueNotice,
    notifyOwner,
    channels,
    reloadConfig = reloadOnRestart,
    config: source,
  }: RunnerFactoryDeps) => {
    const { config } = opts;
    assertRunnerAvailable(config.runner);
    const providerApiKey = opts.secrets.get(config.provider.api_key_env);
    const classifier = await createBashClassifier(resolveBashGateWasmPaths());
    const runSignals = createRunSignals();
    const groupOfRun = (runId: number) => {
      const run = store.runs.get(runId);
      return run ? store.groups.get(run.groupId) : undefined;
    };
    const taint = createTaintRegistry({
      initial: (runId) => {
        const group = groupOfRun(runId);
        return initialRunTaint(
          group,
          !!group && source.current().groups[group.id]?.contains_secrets === true,
        );
      },
      onTainted: (runId, t) => {
        const group = groupOfRun(runId);
        if (group) store.groups.markTainted(group.id, t);
      },
    });
    // The Cop asks through the runtime's gateway, which exists only further down: reviews happen in runs,
    // after it is set; one asked without it is refused (a flag), never sent around the gateway's accounting.
    const gatewayReview = lateBound<Review>();
    const cop = createCop({
      complete: createGatewayCopComplete(() => gatewayReview.get()),
      config: config.security.cop,
      logger: logger.child({ subsystem: 'cop' }),
    });
    const human = createHumanApproval({
      approvals,
      signalFor: (runId) => runSignals.signal(runId),
      logger,
    });
    const finalFailures = createFinalFailures();
    const bashLedger = createBashLedger();
    const bashCheck = createBashPolicy({
      classifier,
      taint,
      cop,
      human,
      scanSecrets: (text) => opts.scanner.scan(text),
      audit: store.audit,
      ledger: bashLedger,
    });
    const adminProject = opts.adminProject ?? opts.projectRoot;
    // Folders of the admin project its container never sees (the data and config folders, hidden files)
    // or that hold no person's words (dependencies).
    const hiddenFromAdmin = [opts.paths.dataDir, opts.paths.configDir].map((p) =>
      path.relative(adminProject, p),
    );
    const privateText = createPrivateTextCheck({
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
    const secretReads = createSecretReads({ taint, audit: store.audit });
    const attachmentReads = createAttachmentReads({ taint, audit: store.audit });
    const bashRan = createBashReports({
      classifier,
      ledger: bashLedger,
      taint,
      audit: store.audit,
      secretReads,
    });
    const registry = createHostServiceRegistry(source.current);
    const grantedTo = serviceGrants(source.current);
    assertStartableConfig(config, registry, adminGroupId(store.groups));
    const docker = new Docker();
    // Shared with the agent runtime: its orphan sweep keeps this host's containers, MCP servers included.
    const hostInstanceId = crypto.randomUUID();
    const mcp = createMcpServices({
      services: () => source.current().services,
      secret: (name) => opts.secrets.get(name),
      logger: logger.child({ subsystem: 'mcp' }),
      containers: createMcpServerContainers({
        docker,
        hostInstanceId,
        dataDir: opts.paths.dataDir,
        configDir: opts.paths.configDir,
      }),
    });
    mcp.startEager();
    const reviewMutation = createMutationReview({ cop, human, taint, audit: store.audit });
    const callService = createServicePolicy({
      registry,
      servicesConfig: () => source.current().services,
      mcp,
      reviewMutation,
      grantedTo,
      taint,
      cop,
      human,
      scanSecrets: (text) => opts.scanner.scan(text),
      privateText,
      secretAnswer: (runId, service, text) => {
        if (!privateText.addSecretAnswer(runId, service, text).leftOut) return;
        const run = store.runs.get(runId);
        store.audit.record({
          runId,
          groupId: run?.groupId ?? null,
          operation: 'private_text.index',
          decision: 'left_out',
          reason: `what ${service} returned is past the run's 4 MiB of secret answers and not checked`,
        });
      },
      audit: store.audit,
      // The longest deadline of a service (web_fetch's, an MCP server's), with room to answer.
      signalFor: (runId) =>
        AbortSignal.any([
          runSignals.signal(runId),
          AbortSignal.timeout(
            Math.max(
              source.current().web_fetch.timeout_ms,
              ...Object.values(source.current().services).map((s) => s.timeout_ms ?? MCP_DEFAULTS.timeout_ms),
            ) + 5_000,
          ),
        ]),
    });
    const toolsFor = createToolCatalogue({
      mcp,
      services: () => source.current().services,
      builtinTrust: () => registry.builtinTrust(),
      logger,
    });
    let runtime: Awaited<ReturnType<typeof createAgentRuntime>>;
    try {
      runtime = await createAgentRuntime({
        docker,
        hostInstanceId,
        config,
        live: source.current,
        paths: opts.paths,
        projectRoot: opts.projectRoot,
        ...(opts.adminProject ? { adminProject: opts.adminProject } : {}),
        store,
        scheduler,
        enqueueNotice,
        notifyOwner,
        onRunEnded: (runId) => {
          runSignals.end(runId);
          taint.forget(runId);
          bashLedger.forget(runId);
          privateText.forget(runId);
        },
        providerApiKey,
        secret: (name) => opts.secrets.get(name),
        finalFailures,
        taint,
        policy: {
          bashCheck,
          bashRan,
          fileRead: (identity, report) => {
            secretReads.fileRead(identity, report);
            attachmentReads.fileRead(identity, report);
          },
          callService,
          reviewMessage: createMessagePolicy({
            scanSecrets: (text) => opts.scanner.scan(text),
            taint,
            cop,
            human,
            audit: store.audit,
            onDenied: (runId) => finalFailures.withheld(runId, 'the owner did not approve its message'),
            privateText,
          }),
          reviewMutation,
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
        },
        credentials: {
          policy: {
            ...createCredentialPolicy({
              taint,
              cop,
              human,
              scanSecrets: (text) => opts.scanner.scan(text),
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
        },
        formattingFor: (channel) => channels.formattingRules(channel),
        serviceToolsFor: (group) => toolsFor(grantedTo(group)),
        checkRegistration: (channel, chatId) => channels.checkRegistration(channel, chatId),
        onProgress: opts.onProgress,
        logger,
      });
    } catch (err) {
      // Servers started with the host (start = "at_start") must not outlive a runtime that never came up.
      await mcp.close();
      throw err;
    }
    if (runtime.review) gatewayReview.set(runtime.review);
    return {
      ...runtime,
      services: { status: () => mcp.status() },
      // The servers first: the runtime's stop removes this host's containers, and a docker server's
      // connection would take that for a crash and start a new one.
      close: async () => {
        try {
          await mcp.close();
        } finally {
          await runtime.close();
        }
      },
    };
  };
}
