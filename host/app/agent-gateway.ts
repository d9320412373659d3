import type { createCredentialStatusBook } from '../gateway/credential/credential-status.ts';
import { capsWithAccounts, groupDefaults } from '../config/group-defaults.ts';
import { createGateway } from '../gateway/index.ts';
import { createSqliteUsageStore } from '../gateway/spend/usage-store-sqlite.ts';
import { gatewayEvents } from '../router/gateway-events.ts';
import { systemClock } from '../time/clock.ts';
import type { AgentRuntimeDeps } from './agent-runtime-deps.ts';

/**
 * The runs' LLM gateway: the provider behind the spend caps, the credential routes (their answers noted in
 * `credentialBook` for status), transcription and the Cop's reviews, its failures told to the groups.
 */
export function startAgentGateway(
  deps: AgentRuntimeDeps,
  credentialBook: ReturnType<typeof createCredentialStatusBook>,
) {
  const { config, store, logger } = deps;
  return createGateway({
    // The caps with the account layer of the groups bound to accounts, read at each request.
    config: () => ({ ...deps.live().gateway, ...capsWithAccounts(deps.live(), (id) => store.groups.get(id)) }),
    provider: config.provider,
    providerApiKey: deps.providerApiKey ?? '',
    // The host's one usage store, whose queue the run queue's cap check counts too; a runtime made
    // without a host (tests) writes each settlement at once.
    usageStore: deps.usage ?? createSqliteUsageStore(store.db),
    // Read at each request: a reloaded grant or allowlist applies to the next one.
    ...(deps.credentials
      ? {
          credentials: {
            ...deps.credentials.policy,
            record: (owner, row) => {
              // What status shows: the upstream's last answer (0: not reached), not the host's own refusals.
              if (row.refused === undefined) credentialBook.note(row.credential, row.status);
              else if (row.status === 502) credentialBook.note(row.credential, 0);
              deps.credentials?.policy.record(owner, row);
            },
            credentials: () => deps.live().credentials,
            grantedTo: (groupId: string) => {
              const group = store.groups.get(groupId);
              return group ? groupDefaults(deps.live(), group).credentials.value : [];
            },
            secret: deps.credentials.secret,
          },
        }
      : {}),
    clock: systemClock,
    timezone: () => deps.live().assistant.timezone,
    logger: logger.child({ subsystem: 'gateway' }),
    maxOutputTokens: config.runs.max_output_tokens,
    transcription: () => deps.live().media.transcription,
    // The Cop's reviews are spent here too, charged to the reviewed run's group (security applies at restart).
    review: {
      model: config.security.cop.model ?? config.provider.model,
      max_output_tokens: config.security.cop.max_output_tokens,
      max_reviews_per_run: config.security.cop.max_reviews_per_run,
    },
    ...(deps.secret ? { secret: deps.secret } : {}),
    ...gatewayEvents({
      store,
      finalFailures: deps.finalFailures,
      enqueueNotice: deps.enqueueNotice,
      notifyOwner: deps.notifyOwner,
    }),
  });
}

export type AgentGateway = ReturnType<typeof startAgentGateway>;
