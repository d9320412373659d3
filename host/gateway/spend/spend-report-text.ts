import { formatUsd } from './pricing.ts';
import type { SpendFigures, SpendReport } from './spend-report.ts';

const periodName = (days: number) => (days === 1 ? 'today' : `${days} days`);

const tokens = (f: SpendFigures) =>
  `${f.requests} req, ${f.promptTokens.toLocaleString('en')} in / ${f.completionTokens.toLocaleString('en')} out`;

/**
 * The report as plain text for a chat or a terminal: short lines, no table that a phone would wrap. Exact
 * micro-dollars are in `--json`; this rounds to 1/100 of a cent.
 */
export function formatSpendReport(report: SpendReport): string {
  const names = report.periods.map((p) => periodName(p.days));
  const lines: string[] = [
    `Spend up to ${report.today} (${report.periods.map((p, i) => `${names[i]}: ${formatUsd(report.totals[i]?.costMicros ?? 0)}`).join(', ')})`,
  ];

  // Groups that spent nothing in the whole period share one line: an owner with many groups reads the
  // ones that cost something.
  const last = report.periods.length - 1;
  const spent = (g: (typeof report.groups)[number]) => {
    const figures = g.periods[last];
    return !!figures && figures.costMicros + figures.requests > 0;
  };
  const spending = report.groups.filter(spent);
  const idle = report.groups.filter((g) => !spent(g)).map((g) => g.groupId);

  if (spending.length > 0) lines.push('', 'Groups (today against the daily cap):');
  for (const g of spending) {
    const today = g.periods[0];
    const pct = g.todayPercent === null ? 'cap 0: no spend allowed' : `${g.todayPercent} %`;
    const longer = g.periods
      .slice(1)
      .map((p, i) => `${names[i + 1]} ${formatUsd(p.costMicros)}`)
      .join(', ');
    lines.push(
      `- ${g.groupId}: ${formatUsd(today?.costMicros ?? 0)} of ${formatUsd(g.cap.micros)} (${pct})` +
        (longer ? `; ${longer}` : ''),
    );
    for (const m of g.models) {
      const longest = m.periods[m.periods.length - 1];
      if (longest && longest.costMicros + longest.requests > 0)
        lines.push(`    ${m.model}: ${formatUsd(longest.costMicros)} (${tokens(longest)})`);
    }
    // The host's own calls for the group's runs: already in the lines above, named here on their own.
    const reviews = g.reviews[last];
    if (reviews && reviews.requests > 0)
      lines.push(`    of which Cop reviews: ${formatUsd(reviews.costMicros)} (${tokens(reviews)})`);
  }

  if (spending.length > 0 && idle.length > 0) lines.push(`- nothing spent: ${idle.join(', ')}`);
  if (report.models.length > 0)
    lines.push('', `Models (${report.periods.map((p) => periodName(p.days)).join(' / ')}):`);
  for (const m of report.models) {
    lines.push(
      `- ${m.model}: ${m.periods.map((p) => formatUsd(p.costMicros)).join(' / ')}` +
        (m.priced ? '' : ' (no price: charged at the dearest known price)'),
    );
  }

  if (report.topRuns.length > 0) lines.push('', `Most expensive runs (${names[names.length - 1] ?? ''}):`);
  for (const r of report.topRuns) {
    // The run's start is stored in UTC; a run no longer stored is named by its first day of spend.
    const when = r.startedAt ? `${r.startedAt.slice(0, 16).replace('T', ' ')} UTC` : r.firstDay;
    const what =
      r.kind === 'transcription'
        ? 'voice transcription'
        : r.kind === 'review'
          ? `Cop reviews of run ${r.reviewedRunId ?? '?'}`
          : `run ${r.runId}`;
    lines.push(`- ${what} in ${r.groupId}, ${when}: ${formatUsd(r.costMicros)} (${r.models.join(', ')})`);
  }

  if (spending.length === 0 && report.models.length === 0) lines.push('', 'Nothing spent in this period.');
  return lines.join('\n');
}
