import crypto from 'node:crypto';
import Docker from 'dockerode';
import { adminGroupId } from '../admin/admin-group.ts';
import { assertStartableConfig, createHostServiceRegistry, serviceGrants } from '../config/service-grants.ts';
import { createMcpServerContainers } from '../containers/run/mcp-server-container.ts';
import { createMutationReview } from '../security/policies/mutation-review.ts';
import { createServicePolicy } from '../security/policies/service-policy.ts';
import { createToolCatalogue } from '../services/mcp/mcp-catalogue.ts';
import { MCP_DEFAULTS } from '../services/mcp/mcp-config.ts';
import { createMcpServices } from '../services/mcp/mcp-services.ts';
import { timeoutSignal } from '../time/clock-timers.ts';
import type { RunnerFactoryDeps } from './host.ts';
import type { ProductionRunnerOptions } from './production-runner-options.ts';
import type { RunSecurity } from './run-security.ts';

/**
 * The services a run may call (host services and MCP servers) behind the trust matrix: the registry and
 * grants, the MCP servers (the eager ones started now), the service policy and each group's tool list.
 */
export function createRunServices(
  opts: ProductionRunnerOptions,
  { store, logger, config: source, clock }: RunnerFactoryDeps,
  security: RunSecurity,
) {
  const { taint, cop, human, privateText, runSignals } = security;
  const registry = createHostServiceRegistry(source.current);
  const grantedTo = serviceGrants(source.current);
  assertStartableConfig(opts.config, registry, adminGroupId(store.groups));
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
    scanSecrets: security.scanSecrets,
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
        timeoutSignal(
          clock,
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
  return {
    docker,
    hostInstanceId,
    mcp,
    reviewMutation,
    callService,
    serviceToolsFor: (group: Parameters<typeof grantedTo>[0]) => toolsFor(grantedTo(group)),
  };
}

export type RunServices = ReturnType<typeof createRunServices>;
