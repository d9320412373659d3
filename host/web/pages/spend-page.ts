import { formatUsd } from '../../gateway/pricing.ts';
import type { SpendReport } from '../../gateway/spend-report.ts';
import { h, table, type Html } from '../html.ts';

const periodName = (days: number) => (days === 1 ? 'Today' : `${days} days`);

/** The spend report (`carapace usage`'s): per group against its cap, per model, the dearest runs. */
export function spendPage(r: SpendReport): Html {
  const heads = r.periods.map((p) => periodName(p.days));
  return h`<p>Today is ${r.today}. Spent: ${r.periods.map(
    (p, i) =>
      h`${i ? ', ' : ''}${periodName(p.days).toLowerCase()} <strong class="total-${p.days}">${formatUsd(r.totals[i]?.costMicros ?? 0)}</strong>`,
  )}.</p>
<h2>Per group, against its daily cap</h2>
${table(
  ['Group', 'Today of cap', ...heads, 'Daily cap'],
  r.groups.map((g) => {
    const pct = Math.min(100, g.todayPercent ?? 0);
    return h`<tr data-group="${g.groupId}"><td>${g.groupId}</td><td><meter min="0" max="100" value="${pct}"></meter> ${g.todayPercent === null ? 'no cap' : `${g.todayPercent} %`}</td>${g.periods.map(
      (p) => h`<td class="cost">${formatUsd(p.costMicros)}</td>`,
    )}<td>${formatUsd(g.cap.micros)} <span class="muted">(${g.cap.setting})</span></td></tr>`;
  }),
)}
<h2>Per model</h2>
${table(
  ['Model', ...heads, 'Requests', 'Priced'],
  r.models.map(
    (m) =>
      h`<tr><td>${m.model}</td>${m.periods.map((p) => h`<td>${formatUsd(p.costMicros)}</td>`)}<td>${m.periods.at(-1)?.requests ?? 0}</td><td>${m.priced ? 'yes' : 'no: charged the dearest price'}</td></tr>`,
  ),
)}
<h2>Most expensive runs</h2>
${table(
  ['Run', 'Group', 'Started', 'Models', 'Tokens in / out', 'Cost'],
  r.topRuns.map(
    (t) =>
      h`<tr data-run="${t.runId}"><td><a href="/runs/${t.runId}">${t.runId}</a></td><td>${t.groupId}</td><td>${t.startedAt ?? t.firstDay}</td><td>${t.models.join(', ')}</td><td>${t.promptTokens} / ${t.completionTokens}</td><td class="cost">${formatUsd(t.costMicros)}</td></tr>`,
  ),
)}`;
}
