import type { ApprovalRecord } from '../../store/approvals-store.ts';
import { formatDuration, type ConsoleFormat } from '../format.ts';
import { cell, h, postButton, row, table, type Html } from '../html.ts';
import { pushDetail } from './push-detail.ts';

export interface PendingView {
  id: string;
  groupId: string;
  /** The text the admin chat was shown, or undefined when it could not be shown there either. */
  text: string | undefined;
  /** The stored parameters (canonical JSON), for what the console shows beside the text. */
  paramsJson: string | undefined;
  expiresAt: number;
}

/** The live part of the approvals page: pending requests with their full text and buttons, then decided ones. */
export function approvalsList(
  pending: PendingView[],
  decided: ApprovalRecord[],
  csrf: string,
  f: ConsoleFormat,
  now: number,
): Html {
  return h`<h2>Waiting (${pending.length})</h2>
${
  pending.length === 0
    ? h`<p class="muted" id="none-pending">No approval requests are waiting.</p>`
    : pending.map(
        (p) => h`<div class="card pending" data-approval="${p.id}">
${pushDetail(p.paramsJson, f)}
<pre>${p.text ?? `Request ${p.id} of group ${p.groupId} (its parameters cannot be shown)`}</pre>
<p class="muted">Expires in ${formatDuration(Math.max(0, p.expiresAt - now))}, at ${f.clock(p.expiresAt)}.</p>
${postButton(`/approvals/${p.id}/approve`, csrf, 'Approve', 'approve')} ${postButton(`/approvals/${p.id}/deny`, csrf, 'Deny', 'deny')}
</div>`,
      )
}
<h2>Decided</h2>
${table(
  ['Id', 'Group', 'Operation', 'Outcome', 'By', 'When'],
  decided.map((a) =>
    row(
      [a.id, a.groupId, a.operation, cell(a.status, 'status'), a.decidedBy ?? '', f.at(a.decidedAt)],
      h` data-approval="${a.id}"`,
    ),
  ),
)}`;
}

export function approvalsPage(list: Html, notice: string | undefined): Html {
  return h`${notice ? h`<p class="notice" id="notice">${notice}</p>` : ''}
<div id="approvals" data-live="approvals" data-src="/approvals/list">${list}</div>`;
}
