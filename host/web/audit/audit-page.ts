import type { AuditFilter } from '../../store/console-reads.ts';
import type { AuditRow } from '../../store/audit-store.ts';
import type { ConsoleFormat } from '../format.ts';
import { cell, h, row, table, type Html } from '../html.ts';

const field = (name: string, label: string, value: string | undefined, type = 'text') =>
  h`<label>${label} <input name="${name}" type="${type}" value="${value ?? ''}"></label>`;

/** The filter form and one page of rows, newest first, with a link to the next page. */
export function auditPage(f: AuditFilter, rows: AuditRow[], fmt: ConsoleFormat): Html {
  const last = rows.at(-1);
  const next = new URLSearchParams();
  for (const [k, v] of [
    ['group', f.groupId],
    ['kind', f.kind],
    ['decision', f.decision],
    ['since', f.since],
    ['until', f.until],
  ] as const)
    if (v !== undefined) next.set(k, v);
  if (last) next.set('before', String(last.id));
  return h`<form method="get" action="/audit" class="filters">
${field('group', 'Group', f.groupId)}${field('kind', 'Kind', f.kind)}${field('decision', 'Decision', f.decision)}
${field('since', 'Since', f.since)}${field('until', 'Until', f.until)}
<button type="submit">Filter</button></form>
<p class="muted">${rows.length} row(s)${f.beforeId === undefined ? '' : ` older than #${f.beforeId}`}. Times are in ${fmt.timeZone}, Since and Until too (e.g. 2026-11-27 or 2026-11-27T08:00; end with Z for UTC).</p>
${table(
  ['#', 'When', 'Group', 'Run', 'Operation', 'Decision', 'Reason', 'By'],
  rows.map((r) =>
    row(
      [
        r.id,
        fmt.at(r.at),
        r.groupId ?? '',
        r.runId === null ? '' : h`<a href="/runs/${r.runId}">${r.runId}</a>`,
        r.operation,
        cell(r.decision, 'status'),
        cell(r.reason ?? '', 'wrap'),
        r.approver ?? '',
      ],
      h` data-audit="${r.id}"`,
    ),
  ),
)}
${rows.length === f.limit && last ? h`<p><a href="/audit?${next.toString()}" id="older">Older rows</a></p>` : ''}`;
}
