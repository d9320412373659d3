import { createDraftGate } from '../security/policies/draft-gate.ts';
import { createAgentRuntime } from './agent-runtime.ts';
import type { ProductionRunnerOptions } from './production-runner-options.ts';
import type { HostDeps, RunnerFactoryDeps } from './host.ts';
import { createRunCredentials, createRunPolicy } from './run-policy.ts';
import { createRunSecurity } from './run-security.ts';
import { createRunServices } from './run-services.ts';

export type { ProductionRunnerOptions };

/**
 * The runner `carapace start` uses: real containers behind the real security policy. Only real parts are
 * built here; test doubles never are. The parts: what decides (`run-security.ts`), the services a run may
 * call (`run-services.ts`), the policy the runtime asks (`run-policy.ts`).
 */
export function productionRunnerFactory(opts: ProductionRunnerOptions): HostDeps['createRunner'] {
  return async (deps: RunnerFactoryDeps) => {
    const { config } = opts;
    const providerApiKey = opts.secrets.get(config.provider.api_key_env);
    const security = await createRunSecurity(opts, deps);
    const services = createRunServices(opts, deps, security);
    const { taint, runSignals, bashLedger, privateText } = security;
    let runtime: Awaited<ReturnType<typeof createAgentRuntime>>;
    try {
      runtime = await createAgentRuntime({
        docker: services.docker,
        hostInstanceId: services.hostInstanceId,
        config,
        live: deps.config.current,
        paths: opts.paths,
        projectRoot: opts.projectRoot,
        ...(opts.adminProject ? { adminProject: opts.adminProject } : {}),
        store: deps.store,
        usage: deps.usage,
        scheduler: deps.scheduler,
        enqueueNotice: deps.enqueueNotice,
        notifyOwner: deps.notifyOwner,
        onRunEnded: (runId) => {
          runSignals.end(runId);
          taint.forget(runId);
          bashLedger.forget(runId);
          privateText.forget(runId);
        },
        providerApiKey,
        secret: (name) => opts.secrets.get(name),
        finalFailures: security.finalFailures,
        taint,
        policy: createRunPolicy(opts, deps, security, services),
        credentials: createRunCredentials(opts, deps, security),
        formattingFor: (channel) => deps.channels.formattingRules(channel),
        serviceToolsFor: services.serviceToolsFor,
        checkRegistration: (channel, chatId) => deps.channels.checkRegistration(channel, chatId),
        onProgress: opts.onProgress,
        logger: deps.logger,
      });
    } catch (err) {
      // Servers started with the host (start = "at_start") must not outlive a runtime that never came up.
      await services.mcp.close();
      throw err;
    }
    if (runtime.review) security.gatewayReview.set(runtime.review);
    return {
      ...runtime,
      draftGate: (runId) =>
        createDraftGate({ scanSecrets: security.scanSecrets, taint: () => taint.get(runId) }),
      services: { status: () => services.mcp.status() },
      // The servers first: the runtime's stop removes this host's containers, and a docker server's
      // connection would take that for a crash and start a new one.
      close: async () => {
        try {
          await services.mcp.close();
        } finally {
          await runtime.close();
        }
      },
    };
  };
}
