import type { ApprovalRecord } from '../../store/approvals-store.ts';
import { h, postButton, table, when, type Html } from '../html.ts';

export interface PendingView {
  id: string;
  groupId: string;
  /** The text the admin chat was shown, or undefined when it could not be shown there either. */
  text: string | undefined;
  expiresAt: number;
}

/** The live part of the approvals page: pending requests with their full text and buttons, then decided ones. */
export function approvalsList(pending: PendingView[], decided: ApprovalRecord[], csrf: string): Html {
  return h`<h2>Waiting (${pending.length})</h2>
${
  pending.length === 0
    ? h`<p class="muted" id="none-pending">No approval requests are waiting.</p>`
    : pending.map(
        (p) => h`<div class="card pending" data-approval="${p.id}">
<pre>${p.text ?? `Request ${p.id} of group ${p.groupId} (its parameters cannot be shown)`}</pre>
<p class="muted">Expires ${when(p.expiresAt)} UTC</p>
${postButton(`/approvals/${p.id}/approve`, csrf, 'Approve', 'approve')} ${postButton(`/approvals/${p.id}/deny`, csrf, 'Deny', 'deny')}
</div>`,
      )
}
<h2>Decided</h2>
${table(
  ['Id', 'Group', 'Operation', 'Outcome', 'By', 'When'],
  decided.map(
    (a) =>
      h`<tr data-approval="${a.id}"><td>${a.id}</td><td>${a.groupId}</td><td>${a.operation}</td><td class="status">${a.status}</td><td>${a.decidedBy ?? ''}</td><td>${when(a.decidedAt)}</td></tr>`,
  ),
)}`;
}

export function approvalsPage(list: Html, notice: string | undefined): Html {
  return h`${notice ? h`<p class="notice" id="notice">${notice}</p>` : ''}
<div id="approvals" data-live="approvals" data-src="/approvals/list">${list}</div>`;
}
