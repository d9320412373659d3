import { createLiveDayFormatter } from './day.ts';
import { groupCap, mayReserve, spendCapMessage, type CapConfig } from './spend-cap.ts';

/** A group's daily spend cap as it stands now. */
export interface CapStatus {
  /** Its settled spend today has reached the cap: the gateway would admit none of its requests. */
  reached: boolean;
  /** The day, in the assistant's zone, the cap counts on. */
  day: string;
  /** The cap, the group and the setting that raises it. */
  message: string;
}

export interface CapStatusDeps {
  /** Read at each check: a reloaded cap applies at once. */
  config: () => CapConfig;
  /** Synchronous (the host's SQLite usage store): the router asks as it decides whether a run starts. */
  spentTodayMicros(groupId: string, day: string): number;
  /** `[assistant] timezone`, read at each check: the cap resets at the owner's midnight. */
  timezone: () => string;
  now: () => number;
}

/**
 * The gateway's admission rule on the gateway's records, for the host: a group whose settled spend today
 * has reached its cap gets no request admitted, so a message to it is refused without starting a run.
 * Requests in flight are not counted: one may still settle under its reservation, and then the run may go on.
 */
export function createCapStatus(deps: CapStatusDeps): (groupId: string) => CapStatus {
  const dayOf = createLiveDayFormatter(deps.timezone);
  return (groupId) => {
    const config = deps.config();
    const day = dayOf(deps.now());
    const spent = deps.spentTodayMicros(groupId, day);
    return {
      reached: !mayReserve(groupCap(config, groupId).micros, spent, 0),
      day,
      message: spendCapMessage(config, groupId),
    };
  };
}
