import { createDayFormatter } from '../gateway/spend/day.ts';
import type { SpendConfig, SpendQuery, SpendReport, SpendReporter } from '../gateway/spend/spend-report.ts';
import { formatSpendReport } from '../gateway/spend/spend-report-text.ts';

export interface SpendViewDeps {
  reporter: SpendReporter;
  /** The registered groups' ids, read at each report (a group added since is listed). */
  groupIds(): readonly string[];
  /** The caps and prices running now (`[gateway]`), read at each report. */
  gateway(): SpendConfig;
  /** `[assistant] timezone`, read at each report: "today" is the owner's day, the one caps reset on. */
  timezone(): string;
  now(): number;
}

export type SpendViewQuery = Omit<SpendQuery, 'today' | 'groups'>;

/**
 * The spend report as of now, for the owner: the admin chat's `usage`, the daily summary and `carapace usage`
 * all ask it, so they show the same figures.
 */
export function createSpendView(deps: SpendViewDeps) {
  const report = (query: SpendViewQuery = {}): SpendReport =>
    deps.reporter(
      { ...query, today: createDayFormatter(deps.timezone())(deps.now()), groups: deps.groupIds() },
      deps.gateway(),
    );
  return { report, text: (query: SpendViewQuery = {}) => formatSpendReport(report(query)) };
}

export type SpendView = ReturnType<typeof createSpendView>;
