import Docker from 'dockerode';
import type { Logger } from 'pino';
import { RPC_ERROR_CODES } from '../../container-agent/src/protocol.ts';
import { RpcError } from '../../container-agent/src/rpc/errors.ts';
import { createBashClassifier } from '../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../container-agent/src/bash-gate/wasm-files.ts';
import { formattingRulesFor } from '../channels/formatting-rules.ts';
import type { SecretSource } from '../config/secrets.ts';
import type { HostConfig } from '../config/schema.ts';
import type { CarapacePaths } from '../config/paths.ts';
import { createAgentRuntime } from '../containers/agent-runtime.ts';
import { upstreamApiBase } from '../gateway/config.ts';
import type { HostDeps } from '../main.ts';
import { createBashPolicy, type HumanApproval } from '../security/bash-policy.ts';
import { createCop } from '../security/cop.ts';
import { createOpenAiCopComplete } from '../security/cop-openai-complete.ts';
import type { SecretScanner } from '../security/secret-scanner.ts';
import { createTaintRegistry } from '../security/taint.ts';

export interface ProductionRunnerOptions {
  config: HostConfig;
  paths: CarapacePaths;
  projectRoot: string;
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
  }: {
    store: Parameters<HostDeps['createRunner']>[0]['store'];
    logger: Logger;
  }) => {
    const { config } = opts;
    const providerApiKey = opts.secrets.get(config.provider.api_key_env);
    const classifier = await createBashClassifier(resolveBashGateWasmPaths());
    const taint = createTaintRegistry((runId) => {
      const run = store.runs.get(runId);
      const group = run ? store.groups.get(run.groupId) : undefined;
      // Messages of any group but the owner's own admin chat can be written by strangers.
      return {
        corruption: !group?.isAdmin,
        secret: !!(group && config.groups[group.id]?.contains_secrets),
      };
    });
    const cop = createCop({
      complete: createOpenAiCopComplete({
        baseURL: upstreamApiBase(config.provider),
        apiKey: providerApiKey ?? 'none',
        model: config.security.cop.model ?? config.provider.model,
      }),
      config: config.security.cop,
      logger: logger.child({ subsystem: 'cop' }),
    });
    // Until approvals are wired, anything that needs the owner is denied (and audited as such).
    const human: HumanApproval = { ask: async () => false };
    const bashCheck = createBashPolicy({
      classifier,
      taint,
      cop,
      human,
      scanSecrets: (text) => opts.scanner.scan(text),
      audit: store.audit,
    });
    return createAgentRuntime({
      docker: new Docker(),
      config,
      paths: opts.paths,
      projectRoot: opts.projectRoot,
      store,
      providerApiKey,
      policy: {
        bashCheck,
        callService: async (_identity, service) => {
          throw new RpcError(RPC_ERROR_CODES.methodNotFound, `there is no service "${service}"`);
        },
      },
      formattingFor: formattingRulesFor,
      onProgress: opts.onProgress,
      logger,
    });
  };
}
