import type { GatewayConfig } from './config.ts';
import { formatUsd, usdToMicros } from './pricing.ts';
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
  onSpendCapReached: (groupId: string, message: string, day: string) => void;
  /**
   * Once per group and day, when a settled request brings the group's spend to SPEND_WARNING_PERCENT of its
   * cap without reaching it (a request that reaches the cap tells only the cap).
   */
  onSpendWarning?: (groupId: string, message: string, day: string) => void;
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

/** The share of a daily cap at which the owner is warned, in percent. */
export const SPEND_WARNING_PERCENT = 80;

/** Which notice a group's settled spend calls for: none, the warning, or the cap's. */
export function spendLevel(spentMicros: number, capMicros: number): 'under' | 'warning' | 'cap' {
  if (spentMicros >= capMicros) return 'cap';
  return spentMicros * 100 >= capMicros * SPEND_WARNING_PERCENT ? 'warning' : 'under';
}

/** The admission rule, alone so its arithmetic can be tested: strictly under the cap, counting reservations. */
export function mayReserve(capMicros: number, settledMicros: number, reservedMicros: number): boolean {
  return settledMicros + reservedMicros < capMicros;
}

/**
 * Settled spend is read from the usage store at each request; reservations are kept in memory (the
 * gateway is the only one forwarding this data folder's requests). The check and the reservation happen
 * in one synchronous step after the read, and a read that a settlement overtook is repeated, so parallel
 * requests cannot both slip under the cap on a stale figure. "Notified" is remembered in memory, for today:
 * the host's notices carry an outbox key per group and day, which keeps them once a day across restarts.
 */
export function createSpendCap(deps: SpendCapDeps): SpendCap {
  let currentDay = '';
  const groups = new Map<string, GroupDay>();
  // `<level>:<group>` for today; the notices' outbox keys make them once per day across restarts too.
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

  const once = (level: 'warning' | 'cap', groupId: string, tell: () => void) => {
    if (notified.has(`${level}:${groupId}`)) return;
    notified.add(`${level}:${groupId}`);
    try {
      tell();
    } catch (error) {
      deps.onNotifyError(error, groupId);
    }
  };
  const notifyOnce = (groupId: string, day: string) =>
    once('cap', groupId, () => deps.onSpendCapReached(groupId, message(groupId, capFor(groupId)), day));
  const warnOnce = (groupId: string, day: string, spentMicros: number) =>
    once('warning', groupId, () => {
      const cap = groupCap(deps.config(), groupId);
      deps.onSpendWarning?.(
        groupId,
        `group ${groupId} has spent ${formatUsd(spentMicros)} of its daily spend cap of ${formatUsd(cap.micros)} today ` +
          `(${Math.floor((spentMicros * 100) / cap.micros)} %); at the cap it gets no answers until tomorrow (${cap.setting})`,
        day,
      );
    });

  return {
    async reserve(groupId, day, micros) {
      const state = groupDay(groupId, day);
      const spent = await settledSpend(groupId, day, state);
      const capUsd = capFor(groupId);
      const capMicros = usdToMicros(capUsd);
      if (!mayReserve(capMicros, spent, state.reserved)) {
        notifyOnce(groupId, day);
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
                const level = spendLevel(after, capMicros);
                if (level === 'cap') notifyOnce(groupId, day);
                else if (level === 'warning') warnOnce(groupId, day, after);
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
