import type { GatewayConfig } from './config.ts';
import { usdToMicros } from './pricing.ts';
import type { UsageStore } from './usage-store.ts';

/** Money set aside for one request in flight; settled with its real cost once the provider answered. */
export interface Reservation {
  readonly micros: number;
  /**
   * Replaces the reservation by the real cost: `record` stores the cost and returns it. Only the first
   * call counts.
   */
  settle(record: () => Promise<number> | number): Promise<void>;
}

export type ReserveResult =
  | { ok: true; reservation: Reservation }
  | { ok: false; capUsd: number; spentMicros: number; reservedMicros: number };

export interface SpendCap {
  /**
   * Sets aside `micros` for a request if the group's settled spend plus what is reserved for its requests
   * in flight is still under the cap. So the cap is a bound: it is overshot by at most one reservation,
   * whatever a container sends, in parallel or not. When refused, notifies the host (once per group and day).
   */
  reserve(groupId: string, day: string, micros: number): Promise<ReserveResult>;
  message(groupId: string, capUsd: number): string;
}

export interface SpendCapDeps {
  /** Read at each check, so a reloaded cap applies to the next request. */
  config: () => Pick<GatewayConfig, 'daily_cap_usd' | 'group_caps_usd'>;
  usageStore: Pick<UsageStore, 'spentTodayMicros'>;
  /** Once per group and day; `message` names the cap and the setting that raises it. */
  onSpendCapReached: (groupId: string, message: string) => void;
  onNotifyError: (error: unknown, groupId: string) => void;
}

interface GroupDay {
  /** Set aside for requests in flight. */
  reserved: number;
  /** Bumped at every settlement, so a read of the store that raced one is noticed and repeated. */
  settlements: number;
}

/** A group's daily cap, and the setting it comes from: its own override, else the default. */
export function groupCap(
  config: Pick<GatewayConfig, 'daily_cap_usd' | 'group_caps_usd'>,
  groupId: string,
): { usd: number; micros: number; setting: string } {
  const own = Object.hasOwn(config.group_caps_usd, groupId);
  const usd = own ? (config.group_caps_usd[groupId] ?? config.daily_cap_usd) : config.daily_cap_usd;
  return {
    usd,
    micros: usdToMicros(usd),
    setting: own ? `[gateway].group_caps_usd."${groupId}"` : '[gateway].daily_cap_usd',
  };
}

/** The admission rule, alone so its arithmetic can be tested: strictly under the cap, counting reservations. */
export function mayReserve(capMicros: number, settledMicros: number, reservedMicros: number): boolean {
  return settledMicros + reservedMicros < capMicros;
}

/**
 * Settled spend is read from the usage store at each request; reservations are kept in memory (the
 * gateway is the only one forwarding this data folder's requests). The check and the reservation happen
 * in one synchronous step after the read, and a read that a settlement overtook is repeated, so parallel
 * requests cannot both slip under the cap on a stale figure. "Notified" is remembered in memory only, so
 * a host restart may notify once more.
 */
export function createSpendCap(deps: SpendCapDeps): SpendCap {
  let currentDay = '';
  const groups = new Map<string, GroupDay>();
  const notified = new Set<string>();

  const capFor = (groupId: string): number => groupCap(deps.config(), groupId).usd;

  const groupDay = (groupId: string, day: string): GroupDay => {
    if (day !== currentDay) {
      // Requests still in flight from yesterday settle into their own, dropped, entry.
      currentDay = day;
      groups.clear();
      notified.clear();
    }
    let entry = groups.get(groupId);
    if (entry === undefined) {
      entry = { reserved: 0, settlements: 0 };
      groups.set(groupId, entry);
    }
    return entry;
  };

  const settledSpend = async (groupId: string, day: string, state: GroupDay): Promise<number> => {
    for (;;) {
      const before = state.settlements;
      const spent = await deps.usageStore.spentTodayMicros(groupId, day);
      if (state.settlements === before) return spent;
    }
  };

  const message = (groupId: string, capUsd: number): string =>
    `daily spend cap of $${capUsd.toFixed(2)} reached for group ${groupId}; raise ${groupCap(deps.config(), groupId).setting} or wait until tomorrow`;

  const notifyOnce = (groupId: string) => {
    if (notified.has(groupId)) return;
    notified.add(groupId);
    try {
      deps.onSpendCapReached(groupId, message(groupId, capFor(groupId)));
    } catch (error) {
      deps.onNotifyError(error, groupId);
    }
  };

  return {
    async reserve(groupId, day, micros) {
      const state = groupDay(groupId, day);
      const spent = await settledSpend(groupId, day, state);
      const capUsd = capFor(groupId);
      const capMicros = usdToMicros(capUsd);
      if (!mayReserve(capMicros, spent, state.reserved)) {
        notifyOnce(groupId);
        return { ok: false, capUsd, spentMicros: spent, reservedMicros: state.reserved };
      }
      state.reserved += micros;
      let open = true;
      return {
        ok: true,
        reservation: {
          micros,
          async settle(record) {
            if (!open) return;
            open = false;
            try {
              // Recorded first, released after: a reader sees the cost in the store before the
              // reservation stops counting it.
              const cost = await record();
              if (cost > 0 && day === currentDay) {
                const after = await deps.usageStore.spentTodayMicros(groupId, day);
                // Tell the group as soon as this request crossed the cap, not only at its next request.
                if (after >= capMicros) notifyOnce(groupId);
              }
            } finally {
              state.reserved -= micros;
              state.settlements++;
            }
          },
        },
      };
    },
    message,
  };
}
