import {
  addDays,
  type GroupSpend,
  type RunSpend,
  type SpendReport,
} from '../../gateway/spend/spend-report.ts';
import { costHtml, formatCost, type ConsoleFormat } from '../format.ts';
import { cell, h, row, table, type Html } from '../html.ts';

const periodName = (days: number) => (days === 1 ? 'Today' : `${days} days`);

const CHART_W = 4;
const CHART_H = 28;

/**
 * One group's days of the longest period as bars, scaled to its daily cap (or its dearest day, when that is
 * more), with the cap as a line: SVG attributes, no style, so the CSP lets it through.
 */
function dayChart(r: SpendReport, g: GroupSpend): Html {
  const days = r.periods.at(-1)?.days ?? 1;
  const first = addDays(r.today, 1 - days);
  const spent = new Map(r.daily.filter((d) => d.groupId === g.groupId).map((d) => [d.day, d.costMicros]));
  const top = Math.max(g.cap.micros, ...spent.values(), 1);
  const capY = CHART_H - Math.round((g.cap.micros / top) * CHART_H);
  const bars = Array.from({ length: days }, (_, i) => {
    const day = addDays(first, i);
    const micros = spent.get(day) ?? 0;
    const height = micros === 0 ? 0 : Math.max(1, Math.round((micros / top) * CHART_H));
    return h`<rect x="${i * CHART_W}" y="${CHART_H - height}" width="${CHART_W - 1}" height="${height}" fill="#3b82f6"><title>${day}: ${formatCost(micros)}</title></rect>`;
  });
  return h`<svg class="chart" width="${days * CHART_W}" height="${CHART_H}" viewBox="0 0 ${days * CHART_W} ${CHART_H}" role="img" aria-label="${g.groupId}: spend per day, last ${days} days">${bars}${g.cap.micros > 0 ? h`<line x1="0" x2="${days * CHART_W}" y1="${capY}" y2="${capY}" stroke="#a32020" stroke-dasharray="2 2"><title>daily cap ${formatCost(g.cap.micros)}</title></line>` : ''}</svg>`;
}

/** A top-runs row's first cell: a run links to its page, the Cop's reviews to the page of the run reviewed. */
function runCell(t: RunSpend): Html | string {
  if (t.kind === 'transcription') return 'voice transcription';
  if (t.kind === 'review')
    return h`Cop reviews of <a href="/runs/${t.reviewedRunId ?? ''}">${t.reviewedRunId ?? ''}</a>`;
  return h`<a href="/runs/${t.runId}">${t.runId}</a>`;
}

/** The spend report (`carapace usage`'s): per group against its cap, per model, the dearest runs. */
export function spendPage(r: SpendReport, f: ConsoleFormat): Html {
  const heads = r.periods.map((p) => periodName(p.days));
  return h`<p>Today is ${r.today}. Spent: ${r.periods.map(
    (p, i) =>
      h`${i ? ', ' : ''}${periodName(p.days).toLowerCase()} <strong class="total-${p.days}">${costHtml(r.totals[i]?.costMicros ?? 0)}</strong>`,
  )}.</p>
<h2>Per group, against its daily cap</h2>
${table(
  ['Group', 'Today of cap', ...heads, 'Daily cap', `Per day (${r.periods.at(-1)?.days ?? 1} days)`],
  r.groups.map((g) => {
    const pct = Math.min(100, g.todayPercent ?? 0);
    return row(
      [
        g.groupId,
        h`<meter min="0" max="100" value="${pct}"></meter> ${g.todayPercent === null ? 'no cap' : `${g.todayPercent} %`}`,
        ...g.periods.map((p) => costHtml(p.costMicros)),
        h`${costHtml(g.cap.micros)} <span class="muted">(${g.cap.setting})</span>`,
        dayChart(r, g),
      ],
      h` data-group="${g.groupId}"`,
    );
  }),
)}
<h2>Per model</h2>
${table(
  ['Model', ...heads, 'Requests', 'Priced'],
  r.models.map((m) =>
    row([
      m.model,
      ...m.periods.map((p) => costHtml(p.costMicros)),
      m.periods.at(-1)?.requests ?? 0,
      m.priced ? 'yes' : 'no: charged the dearest price',
    ]),
  ),
)}
<h2>Most expensive runs</h2>
${table(
  ['Run', 'Group', 'Started', 'Models', 'Tokens in / out', 'Cost'],
  r.topRuns.map((t) =>
    row(
      [
        runCell(t),
        t.groupId,
        t.startedAt === null ? t.firstDay : f.at(t.startedAt),
        cell(t.models.join(', '), 'wrap'),
        `${t.promptTokens} / ${t.completionTokens}`,
        costHtml(t.costMicros),
      ],
      h` data-run="${t.runId}"`,
    ),
  ),
)}`;
}
