import type { AuditRow } from '../../store/audit-store.ts';
import type { RunCost, RunMessage, RunReply } from '../../store/console-reads.ts';
import type { RunRecord } from '../../store/runs-store.ts';
import { costHtml, formatDuration, type ConsoleFormat } from '../format.ts';
import { cell, h, row, table, type Html } from '../html.ts';

export interface QueueView {
  active: { groupId: string; runId: number }[];
  waiting: string[];
  retrying: { groupId: string; attempt: number }[];
}

const runLink = (id: number) => h`<a href="/runs/${id}">${id}</a>`;

/** The live part: what runs and waits now, then the newest runs. */
export function runsList(queue: QueueView, recent: RunRecord[], f: ConsoleFormat): Html {
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
  ['Run', 'Group', 'Status', 'Started', 'Took', 'Why it ended'],
  recent.map((r) =>
    row(
      [
        runLink(r.id),
        r.groupId,
        cell(r.status, 'status'),
        f.at(r.startedAt),
        took(r),
        cell(r.exitReason ?? '', 'wrap'),
      ],
      h` data-run="${r.id}"`,
    ),
  ),
)}`;
}

export function runsPage(list: Html): Html {
  return h`<div id="runs" data-live="runs" data-src="/runs/list">${list}</div>`;
}

/** How long a run took, or '' while it runs (or when a time cannot be read). */
function took(r: RunRecord): string {
  if (r.endedAt === null) return '';
  return formatDuration(Date.parse(r.endedAt) - Date.parse(r.startedAt));
}

type Entry = { at: string; kind: string; text: string; detail: string };

/** One run: its replies, the decisions taken in it with their reasons (in order), and what it cost. */
export function runTimelinePage(
  run: RunRecord,
  t: { messages: RunMessage[]; audit: AuditRow[]; replies: RunReply[]; cost: RunCost[] },
  f: ConsoleFormat,
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
  const start = Date.parse(run.startedAt);
  // Offsets from the run's start: "+2.4 s" says more about a run than a clock time does.
  const offset = (at: string) => {
    const ms = Date.parse(at) - start;
    return Number.isFinite(ms) ? `${ms < 0 ? '−' : '+'}${formatDuration(Math.abs(ms))}` : '';
  };
  return h`<p>Group <strong>${run.groupId}</strong>, attempt ${run.attempt}, <span class="status">${run.status}</span>,
started ${f.at(run.startedAt)}${run.endedAt ? h`, took <span id="run-took">${took(run)}</span>` : ''}. ${run.exitReason ?? ''}</p>
<h2>Timeline</h2>
${table(
  ['When', 'What', 'Text or reason', 'Details'],
  entries.map((e) =>
    row([
      h`<span class="offset">${offset(e.at)}</span> <span class="muted">${f.clock(e.at)}</span>`,
      e.kind,
      cell(e.text, 'wrap'),
      cell(e.detail.slice(0, 400), 'wrap muted'),
    ]),
  ),
)}
<h2>Cost</h2>
${table(
  ['Model', 'Requests', 'Prompt tokens', 'Completion tokens', 'Cost'],
  t.cost.map((c) => row([c.model, c.requests, c.promptTokens, c.completionTokens, costHtml(c.costMicros)])),
)}
<p>Total: <strong id="run-cost">${costHtml(total)}</strong></p>`;
}
