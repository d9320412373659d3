import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';
import type { AdminChats } from './admin-chats.ts';
import { createDailySummary } from './daily-summary.ts';
import { createPriceNotes, type PriceNotesDeps } from './price-notes.ts';
import type { SpendView } from './spend-view.ts';

export interface DailySummaryWiringDeps {
  spend: Pick<SpendView, 'text' | 'report'>;
  /** The configuration running now: `[admin] daily_summary`, the zone, the models and prices. */
  live(): ReturnType<PriceNotesDeps['config']> & {
    admin: { daily_summary?: string | undefined };
    assistant: { timezone: string };
  };
  /** Calls back on every applied config change; returns the unsubscribe. */
  onConfigChange(listener: () => void): () => void;
  adminChats: Pick<AdminChats, 'notify'>;
  clock: Clock;
  logger: Logger;
}

/**
 * The owner's daily summary (today's spend and the price notes) at `[admin] daily_summary`; a new time or
 * time zone moves the next one. Returns the stop.
 */
export function startDailySummary(deps: DailySummaryWiringDeps): () => void {
  const { live, clock } = deps;
  const priceNotes = createPriceNotes({ spend: deps.spend, config: live, now: clock.now });
  const summary = createDailySummary({
    clock,
    settings: () => ({ at: live().admin.daily_summary, timezone: live().assistant.timezone }),
    summary: () => [deps.spend.text({ days: 1 }), ...priceNotes()].join('\n'),
    notify: (key, text) => deps.adminChats.notify(key, text),
    onError: (err) => deps.logger.error({ err }, 'the daily summary failed'),
  });
  summary.start();
  const unsubscribe = deps.onConfigChange(() => summary.rearm());
  return () => {
    unsubscribe();
    summary.stop();
  };
}
