import { formatDiff, type ConfigChange } from '../../config/config-diff.ts';
import { describeHistoryKeys, type HistoryEntry } from '../../config/config-history.ts';
import type { ConsoleFormat } from '../format.ts';
import { cell, h, postButton, row, table, type Html } from '../html.ts';

/** The last change and the backups, each with a rollback button: `carapace config diff|history|rollback`. */
export function configPage(
  p: {
    file: string;
    last: { replacedAt: string; changes: ConfigChange[] } | undefined;
    history: HistoryEntry[];
    notice?: string;
  },
  csrf: string,
  f: ConsoleFormat,
): Html {
  return h`${p.notice ? h`<pre class="notice" id="notice">${p.notice}</pre>` : ''}
<p class="muted">${p.file}</p>
<h2>Last change</h2>
${
  p.last
    ? h`<p>Against the version replaced ${f.at(p.last.replacedAt)}:</p><pre id="last-change">${formatDiff(p.last.changes)}</pre>`
    : h`<p class="muted">No backup yet: one is kept each time carapace config set, a rollback or an approved proposal replaces the file.</p>`
}
<h2>History</h2>
${table(
  ['#', 'Replaced at', 'What the next version changed', ''],
  p.history.map((e) =>
    row(
      [
        e.n,
        f.at(e.replacedAt),
        cell(describeHistoryKeys(e.keys), 'wrap'),
        postButton(`/config/rollback/${e.n}`, csrf, 'Put back'),
      ],
      h` data-backup="${e.n}"`,
    ),
  ),
)}
<p class="muted">Putting a version back runs the same checks as <code>carapace config rollback</code>: it must be valid, it is written only over the file as shown here, and the running host applies it or says why not.</p>`;
}

export function configOffPage(): Html {
  return h`<p>This host runs on a configuration given at start, not on a config file it watches.</p>`;
}
