import type { GatewayDeps } from '../gateway/gateway.ts';
import type { Store } from '../store/store.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import type { FinalFailures } from './final-failures.ts';
import { sendNotices, slowProviderNotices } from './run-notices.ts';
import { createSpendNotices } from './spend-notices.ts';

export interface GatewayEventsDeps {
  store: Pick<Store, 'groups' | 'runs'>;
  finalFailures: Pick<FinalFailures, 'final' | 'capped' | 'transient'>;
  /** Stores a host notice in the outbox and wakes its delivery. */
  enqueueNotice(item: NewOutboxItem): void;
  notifyOwner(key: string, text: string): void;
}

/**
 * What the gateway tells the host, turned into what a run's end decides and what its group and the owner
 * read: the owner's spend warning, the facts that make a run's failure final, and the group's "still
 * working" when the provider is slow. The group hears of its cap only when a run ends refused
 * (run-executor.ts), never while the run that crossed it still answers.
 */
export function gatewayEvents(
  deps: GatewayEventsDeps,
): Pick<GatewayDeps, 'onSpendWarning' | 'upstreamEvents'> {
  const { store, finalFailures } = deps;
  const sinks = { enqueue: deps.enqueueNotice, notifyOwner: deps.notifyOwner };
  const spendNotices = createSpendNotices({ group: (id) => store.groups.get(id), ...sinks });
  return {
    // Keyed by the day the gateway counted on, the one the cap resets on: once per group and day.
    onSpendWarning: spendNotices.warning,
    upstreamEvents: {
      authRejected: (owner, status) =>
        finalFailures.final(
          Number(owner.runId),
          `the LLM provider rejected the host's API key (HTTP ${status}); the owner must check [provider].api_key_env`,
        ),
      // No retry: the run ends, and its end tells the group the cap's line (once a day).
      spendCapRefused: (owner, message) => finalFailures.capped(Number(owner.runId), message),
      // A provider that hangs now will likely hang for an immediate retry too: the run ends here, once, and the
      // owner reads the setting in the give-up notice. One hang is no broken setup: the next message tries again.
      providerTimedOut: (owner, message) => finalFailures.transient(Number(owner.runId), message),
      slow: (owner, waitedMs) => {
        const group = store.groups.get(owner.groupId);
        const run = store.runs.get(Number(owner.runId));
        if (!group || !run) return;
        sendNotices(slowProviderNotices(group, run, waitedMs), sinks);
      },
    },
  };
}
