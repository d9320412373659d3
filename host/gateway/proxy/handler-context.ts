import type { GatewayConfig, ProviderConfig } from '../config.ts';
import type { KeyOwner, KeyRegistry } from '../key-registry.ts';
import type { LogLevels } from '../../logging/logger.ts';
import type { Clock } from '../../time/clock.ts';
import type { RunSlots } from './run-slots.ts';
import type { Reservation, SpendCap } from '../spend/spend-cap.ts';
import type { UpstreamSettings } from './upstream.ts';
import { chargedMicros } from '../spend/usage-cost.ts';
import type { PartialUsage } from '../spend/usage-extract.ts';
import type { UsageStore } from '../spend/usage-store.ts';
import { errorMessage } from '../../errors/error-message.ts';

export interface HandlerContext {
  /** Read at each request: a reloaded config's caps, prices and size limit apply to the next one. */
  config: () => GatewayConfig;
  provider: ProviderConfig;
  providerApiKey: string;
  allowedModels: () => ReadonlySet<string>;
  /** The most output tokens one call may ask for; larger requests are clamped to it. */
  maxOutputTokens: number;
  keys: KeyRegistry;
  spendCap: SpendCap;
  runSlots: RunSlots;
  usageStore: UsageStore;
  upstream: UpstreamSettings;
  dayOf: (epochMs: number) => string;
  clock: Clock;
  logger: LogLevels;
  events: UpstreamEvents;
}

/**
 * What the host hears about a run's provider calls, to decide what the run's group and the owner are told.
 * Both may be called from inside a request: they must only record or enqueue, never throw.
 */
export interface UpstreamEvents {
  /** The provider refused the host's key: no retry of the run can help until the owner fixes it. */
  authRejected(owner: KeyOwner, status: number): void;
  /** A request of the run has waited `waitedMs` for the provider's first answer (`slow_notice_ms`). */
  slow(owner: KeyOwner, waitedMs: number): void;
  /** A request of the run was refused at the group's spend cap: retrying the run cannot help today. */
  spendCapRefused(owner: KeyOwner, message: string): void;
  /** The provider did not start answering within a deadline; `message` names the setting. Final for the run. */
  providerTimedOut(owner: KeyOwner, message: string): void;
}

/** Tells the host about a run's request; the host's handler failing must not fail the request. */
export function tellHost(ctx: HandlerContext, owner: KeyOwner, what: string, call: () => void): void {
  try {
    call();
  } catch (error) {
    ctx.logger.error(
      { runId: owner.runId, groupId: owner.groupId, err: String(error) },
      `gateway: the host's ${what} handler failed`,
    );
  }
}

/**
 * Settles a request's reservation with what it cost: the usage the provider reported, or (undefined) the
 * reserved worst case. Recording failing is logged, never thrown: the answer has already gone out.
 */
export async function settleCharge(
  ctx: HandlerContext,
  owner: KeyOwner,
  day: string,
  model: string,
  reservation: Reservation,
  usage: PartialUsage | undefined,
): Promise<void> {
  await reservation
    .settle(() => record(ctx, owner, day, model, usage, reservation.micros))
    .catch((error: unknown) => logRecordFailure(ctx, owner, model, error));
}

function logRecordFailure(ctx: HandlerContext, owner: KeyOwner, model: string, error: unknown): void {
  ctx.logger.error(
    {
      runId: owner.runId,
      groupId: owner.groupId,
      model,
      err: errorMessage(error),
    },
    'gateway: recording usage failed',
  );
}

/**
 * Stores a request's usage and returns its cost. Without a usage report the cost is unknown: the
 * reserved worst case is charged, so a provider (or a stream cut short, or a client that went away while
 * the provider worked) that stays silent about usage cannot let a group spend past its cap.
 */
async function record(
  ctx: HandlerContext,
  owner: KeyOwner,
  day: string,
  model: string,
  usage: PartialUsage | undefined,
  reservedMicros: number,
): Promise<number> {
  const tokens = { promptTokens: usage?.promptTokens ?? 0, completionTokens: usage?.completionTokens ?? 0 };
  const cost = chargedMicros(model, usage, reservedMicros, ctx.config());
  if (usage === undefined) {
    ctx.logger.warn(
      { runId: owner.runId, groupId: owner.groupId, model, costMicros: cost },
      'gateway: no usage reported for this request; charged its reserved worst case',
    );
  }
  await ctx.usageStore.recordUsage({
    runId: owner.runId,
    groupId: owner.groupId,
    day,
    model,
    ...tokens,
    costMicros: cost,
  });
  return cost;
}
