import type { GatewayConfig } from '../config.ts';
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
   * whatever a container sends, in parallel or not. A refusal tells nobody here: the caller reports it to
   * the run it refused, and the host tells the group when a message goes unanswered for it.
   */
  reserve(groupId: string, day: string, micros: number): Promise<ReserveResult>;
  message(groupId: string, capUsd: number): string;
}

export interface SpendCapDeps {
  /** Read at each check, so a reloaded cap applies to the next request. */
  config: () => CapConfig;
  usageStore: Pick<UsageStore, 'spentTodayMicros'>;
  /**
   * Once per group and day, when a settled request brings the group's spend to SPEND_WARNING_PERCENT of its
   * cap or past the cap. Only the owner hears it: the run that crossed the cap still delivers its answer,
   * so the group is told only when one of its messages is refused.
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

/**
 * What a group's cap is read from: the default, the groups' own overrides and the cap of the account a group
 * is bound to with the setting it is written in, looked up for the one group asked about
 * (`config/group-defaults.ts` gives it): a cap is read for every message and every LLM request, and a table
 * of every group's account cap cost a read of the whole groups table each time.
 */
export type CapConfig = Pick<GatewayConfig, 'daily_cap_usd' | 'group_caps_usd'> & {
  accountCap?: (groupId: string) => { usd: number; setting: string } | undefined;
};

/**
 * A group's daily cap, and the setting it comes from: its own override, else its account's cap, else the
 * default (the order `config/group-defaults.ts` gives every per-account default).
 */
export function groupCap(
  config: CapConfig,
  groupId: string,
): { usd: number; micros: number; setting: string } {
  const own = config.group_caps_usd[groupId];
  const account = config.accountCap?.(groupId);
  const [usd, setting] =
    Object.hasOwn(config.group_caps_usd, groupId) && own !== undefined
      ? [own, `[gateway].group_caps_usd."${groupId}"`]
      : account !== undefined
        ? [account.usd, account.setting]
        : [config.daily_cap_usd, '[gateway].daily_cap_usd'];
  return { usd, micros: usdToMicros(usd), setting };
}

/** The share of a daily cap at which the owner is warned, in percent. */
export const SPEND_WARNING_PERCENT = 80;

/** Where a group's settled spend stands against its cap: under, at the warning share, or at the cap. */
export function spendLevel(spentMicros: number, capMicros: number): 'under' | 'warning' | 'cap' {
  if (spentMicros >= capMicros) return 'cap';
  return spentMicros * 100 >= capMicros * SPEND_WARNING_PERCENT ? 'warning' : 'under';
}

/** The admission rule, alone so its arithmetic can be tested: strictly under the cap, counting reservations. */
export function mayReserve(capMicros: number, settledMicros: number, reservedMicros: number): boolean {
  return settledMicros + reservedMicros < capMicros;
}

/** What a refusal at the cap says: the cap, the group, and the setting that raises it. */
export function spendCapMessage(config: CapConfig, groupId: string): string {
  const cap = groupCap(config, groupId);
  return capText(groupId, cap.usd, cap.setting);
}

function capText(groupId: string, capUsd: number, setting: string): string {
  return `daily spend cap of $${capAsWritten(capUsd)} reached for group ${groupId}; raise ${setting} or wait until tomorrow`;
}

/**
 * A cap as the owner wrote it: in cents when it is whole cents ("$5.00", "$0.01"), else with the digits it
 * has ("$0.002"), never rounded to "$0.00" or up to a cap the owner did not set.
 */
export function capAsWritten(capUsd: number): string {
  const cents = capUsd * 100;
  if (Math.abs(cents - Math.round(cents)) < 1e-9) return capUsd.toFixed(2);
  return String(Number(capUsd.toFixed(6)));
}

/**
 * Settled spend is read from the usage store at each request; reservations are kept in memory (the
 * gateway is the only one forwarding this data folder's requests). The check and the reservation happen
 * in one synchronous step after the read, and a read that a settlement overtook is repeated, so parallel
 * requests cannot both slip under the cap on a stale figure. "Warned" is remembered in memory, for today:
 * the host's notice carries an outbox key per group and day, which keeps it once a day across restarts.
 */
export function createSpendCap(deps: SpendCapDeps): SpendCap {
  let currentDay = '';
  const groups = new Map<string, GroupDay>();
  // The groups warned today; the notice's outbox key makes it once per day across restarts too.
  const warned = new Set<string>();

  const capFor = (groupId: string): number => groupCap(deps.config(), groupId).usd;

  const groupDay = (groupId: string, day: string): GroupDay => {
    if (day !== currentDay) {
      // Requests still in flight from yesterday settle into their own, dropped, entry.
      currentDay = day;
      groups.clear();
      warned.clear();
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

  // The cap in the text is the one the refusal applied.
  const message = (groupId: string, capUsd: number): string =>
    capText(groupId, capUsd, groupCap(deps.config(), groupId).setting);

  const warnOnce = (groupId: string, day: string, spentMicros: number) => {
    if (warned.has(groupId)) return;
    warned.add(groupId);
    const cap = groupCap(deps.config(), groupId);
    // A reload may have set the cap to 0 since the request was admitted.
    const percent = cap.micros > 0 ? Math.floor((spentMicros * 100) / cap.micros) : 100;
    try {
      deps.onSpendWarning?.(
        groupId,
        `group ${groupId} has spent ${formatUsd(spentMicros)} of its daily spend cap of ${formatUsd(cap.micros)} today ` +
          `(${percent} %); at the cap it gets no answers until tomorrow (${cap.setting})`,
        day,
      );
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
      if (!mayReserve(capMicros, spent, state.reserved))
        return { ok: false, capUsd, spentMicros: spent, reservedMicros: state.reserved };
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
                // The owner hears of the crossing at once; the group's answer is still on its way.
                if (spendLevel(after, capMicros) !== 'under') warnOnce(groupId, day, after);
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
