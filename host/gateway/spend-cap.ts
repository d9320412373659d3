import type { GatewayConfig } from './config.ts';
import { usdToMicros } from './pricing.ts';
import type { UsageStore } from './usage-store.ts';

export interface SpendCapVerdict {
  reached: boolean;
  capUsd: number;
  spentMicros: number;
}

export interface SpendCap {
  /** Reads the group's spend for the day; when the cap is reached, notifies the host (once per group and day). */
  check(groupId: string, day: string): Promise<SpendCapVerdict>;
  message(groupId: string, capUsd: number): string;
}

export interface SpendCapDeps {
  config: Pick<GatewayConfig, 'daily_cap_usd' | 'group_caps_usd'>;
  usageStore: UsageStore;
  onSpendCapReached: (groupId: string) => void;
  onNotifyError: (error: unknown, groupId: string) => void;
}

/**
 * The cap is checked before a request is forwarded and again after its usage is recorded, so the group
 * hears about it as soon as it is crossed. A single request can overshoot the cap: its cost is unknown
 * until it finishes. "Notified" is remembered in memory only, so a host restart may notify once more.
 */
export function createSpendCap(deps: SpendCapDeps): SpendCap {
  let notifiedDay = '';
  const notified = new Set<string>();

  const capFor = (groupId: string): number =>
    Object.hasOwn(deps.config.group_caps_usd, groupId)
      ? (deps.config.group_caps_usd[groupId] ?? deps.config.daily_cap_usd)
      : deps.config.daily_cap_usd;

  const notifyOnce = (groupId: string, day: string) => {
    if (day !== notifiedDay) {
      notifiedDay = day;
      notified.clear();
    }
    if (notified.has(groupId)) return;
    notified.add(groupId);
    try {
      deps.onSpendCapReached(groupId);
    } catch (error) {
      deps.onNotifyError(error, groupId);
    }
  };

  return {
    async check(groupId, day) {
      const capUsd = capFor(groupId);
      const spentMicros = await deps.usageStore.spentTodayMicros(groupId, day);
      const reached = spentMicros >= usdToMicros(capUsd);
      if (reached) notifyOnce(groupId, day);
      return { reached, capUsd, spentMicros };
    },
    message(groupId, capUsd) {
      const setting = Object.hasOwn(deps.config.group_caps_usd, groupId)
        ? `[gateway].group_caps_usd."${groupId}"`
        : '[gateway].daily_cap_usd';
      return `daily spend cap of $${capUsd.toFixed(2)} reached for group ${groupId}; raise ${setting} or wait until tomorrow`;
    },
  };
}
