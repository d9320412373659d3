import type { GroupRecord } from '../../store/groups-store.ts';
import type { MemoryHit, MemoryNote } from '../../store/memory-store.ts';
import type { ConsoleFormat } from '../format.ts';
import { cell, h, postButton, row, table, type Html } from '../html.ts';

export interface MemoryView {
  groups: GroupRecord[];
  group: string | undefined;
  query: string;
  hits: MemoryHit[];
  notes: MemoryNote[];
  csrf: string;
  notice?: string;
}

function author(hit: MemoryHit): string {
  if (hit.kind === 'message') return `${hit.senderName} (${hit.senderId})${hit.fromOwner ? ', owner' : ''}`;
  if (hit.kind === 'document')
    return `document ${hit.fileName || '(unnamed)'} sent by ${hit.senderName} (${hit.senderId})`;
  const run = hit.runId === null ? '' : `, run ${hit.runId}`;
  return `note by ${hit.author}${run}${hit.taint.corruption ? ', tainted' : ''}`;
}

const forgetAction = (group: string, ref: string) => `/memory/${encodeURIComponent(group)}/forget/${ref}`;

/**
 * One group's memory: a search over its messages and notes, and its notes. Forgetting a message removes
 * it from the history as well (it is what the index is built from).
 */
export function memoryPage(v: MemoryView, f: ConsoleFormat): Html {
  const picker = h`<form method="get" action="/memory" class="inline"><label>Group <select name="group">${v.groups.map(
    (g) => h`<option value="${g.id}"${g.id === v.group ? h` selected` : ''}>${g.id}</option>`,
  )}</select></label> <input name="q" value="${v.query}" maxlength="500" placeholder="words to look for" aria-label="words to look for"> <button type="submit">Search</button></form>`;
  if (!v.group) return h`${picker}<p class="muted">Pick a group.</p>`;
  const group = v.group;
  const results =
    v.query === ''
      ? ''
      : v.hits.length === 0
        ? h`<p class="muted" id="no-hits">Nothing found.</p>`
        : table(
            ['Ref', 'When', 'Author', 'Text', 'Forget'],
            v.hits.map((hit) => {
              // A document's text is forgotten with the message that carried it.
              const ref = hit.kind === 'document' ? `message:${hit.messageId}` : `${hit.kind}:${hit.id}`;
              return row(
                [
                  ref,
                  f.at(hit.at),
                  author(hit),
                  cell(hit.snippet, 'wrap'),
                  postButton(forgetAction(group, ref), v.csrf, 'Forget'),
                ],
                h` data-ref="${ref}"`,
              );
            }),
          );
  return h`${v.notice ? h`<p class="notice" id="notice">${v.notice}</p>` : ''}${picker}${results}
<h2>Notes of ${group}</h2>
${
  v.notes.length === 0
    ? h`<p class="muted">No notes.</p>`
    : table(
        ['Ref', 'Written', 'By', 'File', 'Text', 'Forget'],
        v.notes.map((n) =>
          row([
            `note:${n.id}`,
            f.at(n.writtenAt),
            n.author,
            cell(n.path, 'wrap'),
            cell(n.text, 'wrap'),
            postButton(forgetAction(group, `note:${n.id}`), v.csrf, 'Forget'),
          ]),
        ),
      )
}`;
}
