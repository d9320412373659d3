import type { AuditRow } from '../../store/audit-store.ts';
import type { RunCost, RunMessage, RunReply } from '../../store/console-reads.ts';
import type { RunRecord } from '../../store/runs-store.ts';
import { formatUsd } from '../../gateway/pricing.ts';
import { h, table, type Html } from '../html.ts';

export interface QueueView {
  active: { groupId: string; runId: number }[];
  waiting: string[];
  retrying: { groupId: string; attempt: number }[];
}

const runLink = (id: number) => h`<a href="/runs/${id}">${id}</a>`;

/** The live part: what runs and waits now, then the newest runs. */
export function runsList(queue: QueueView, recent: RunRecord[]): Html {
  return h`<h2>Active (${queue.active.length})</h2>
${
  queue.active.length === 0
    ? h`<p class="muted">Nothing runs now.</p>`
    : h`<ul>${queue.active.map((r) => h`<li class="active-run">${r.groupId}: run ${runLink(r.runId)}</li>`)}</ul>`
}
<h2>Waiting</h2>
${
  queue.waiting.length + queue.retrying.length === 0
    ? h`<p class="muted">No group waits.</p>`
    : h`<ul>${queue.waiting.map((g) => h`<li>${g}</li>`)}${queue.retrying.map(
        (r) => h`<li>${r.groupId} (retry, attempt ${r.attempt})</li>`,
      )}</ul>`
}
<h2>Recent runs</h2>
${table(
  ['Run', 'Group', 'Status', 'Started', 'Ended', 'Why it ended'],
  recent.map(
    (r) =>
      h`<tr><td>${runLink(r.id)}</td><td>${r.groupId}</td><td class="status">${r.status}</td><td>${r.startedAt}</td><td>${r.endedAt ?? ''}</td><td class="wrap">${r.exitReason ?? ''}</td></tr>`,
  ),
)}`;
}

export function runsPage(list: Html): Html {
  return h`<div id="runs" data-live="runs" data-src="/runs/list">${list}</div>`;
}

type Entry = { at: string; kind: string; text: string; detail: string };

/** One run: its replies, the decisions taken in it with their reasons (in order), and what it cost. */
export function runTimelinePage(
  run: RunRecord,
  t: { messages: RunMessage[]; audit: AuditRow[]; replies: RunReply[]; cost: RunCost[] },
): Html {
  const entries: Entry[] = [
    ...t.messages.map((m) => ({
      at: m.receivedAt,
      kind: m.triggers ? 'message (triggered)' : 'message',
      text: `${m.senderName}: ${m.text}`,
      detail: '',
    })),
    ...t.audit.map((a) => ({
      at: a.at,
      kind: `${a.operation} ${a.decision}`,
      text: a.reason ?? '',
      detail: a.details ?? '',
    })),
    ...t.replies.map((r) => ({ at: r.createdAt, kind: `reply (${r.status})`, text: r.text, detail: '' })),
  ].sort((a, b) => a.at.localeCompare(b.at));
  const total = t.cost.reduce((sum, c) => sum + c.costMicros, 0);
  return h`<p>Group <strong>${run.groupId}</strong>, attempt ${run.attempt}, <span class="status">${run.status}</span>,
started ${run.startedAt}${run.endedAt ? h`, ended ${run.endedAt}` : ''}. ${run.exitReason ?? ''}</p>
<h2>Timeline</h2>
${table(
  ['When', 'What', 'Text or reason', 'Details'],
  entries.map(
    (e) =>
      h`<tr><td>${e.at.slice(11, 23)}</td><td>${e.kind}</td><td class="wrap">${e.text}</td><td class="wrap muted">${e.detail.slice(0, 400)}</td></tr>`,
  ),
)}
<h2>Cost</h2>
${table(
  ['Model', 'Requests', 'Prompt tokens', 'Completion tokens', 'Cost'],
  t.cost.map(
    (c) =>
      h`<tr><td>${c.model}</td><td>${c.requests}</td><td>${c.promptTokens}</td><td>${c.completionTokens}</td><td>${formatUsd(c.costMicros)}</td></tr>`,
  ),
)}
<p>Total: <strong id="run-cost">${formatUsd(total)}</strong></p>`;
}
