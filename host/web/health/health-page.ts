import type { HostStatus } from '../../channels/local/local-api.ts';
import type { ConsoleFormat } from '../format.ts';
import { cell, h, row, table, type Html } from '../html.ts';

const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;

/** One of `carapace doctor`'s answers (its `CheckResult`). */
export interface DoctorResult {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

function doctorPart(checks: DoctorResult[] | undefined, available: boolean): Html {
  if (!available)
    return h`<p class="muted">Run <code>carapace doctor</code> on the host for Docker, image and config checks.</p>`;
  if (!checks)
    return h`<p><a href="/health?doctor=1" id="run-doctor">Run the doctor's checks</a> (Docker, the agent image, config, channels; takes a few seconds).</p>`;
  return table(
    ['Check', 'Result', 'Detail', 'Fix'],
    checks.map((r) =>
      row(
        [r.name, cell(r.ok ? 'ok' : 'FAIL', 'status'), cell(r.detail, 'wrap'), cell(r.fix ?? '', 'wrap')],
        h` data-check="${r.name}"`,
      ),
    ),
  );
}

/** `carapace status`'s facts (channels, pre-started containers, services, outbox, database) and the doctor's checks. */
export function healthPage(
  s: HostStatus,
  checks: DoctorResult[] | undefined,
  doctor: boolean,
  f: ConsoleFormat,
): Html {
  return h`<p>Host pid ${s.pid}, assistant <strong>${s.assistant}</strong>, running since ${f.at(s.startedAt)}.</p>
<h2>Channels</h2>
${table(
  ['Channel', 'State', 'Since', 'Reason', 'Admin chat'],
  s.channels.map((c) =>
    row([
      c.name,
      cell(c.state, 'status'),
      f.at(c.since),
      cell(c.reason ?? '', 'wrap'),
      c.adminChat ? 'linked' : 'not linked',
    ]),
  ),
)}
<h2>Containers</h2>
${
  s.prestart
    ? h`<p>Pre-started: ${s.prestart.containers.length} of ${s.prestart.count} (${s.prestart.containers.map((c) => c.groupId).join(', ') || 'none now'}).</p>`
    : h`<p class="muted">This host runs no containers (no provider or no Docker).</p>`
}
<p>Active runs: ${s.queue.active.length}; waiting: ${s.queue.waiting.length}; retrying: ${s.queue.retrying.length}.</p>
${
  s.services && s.services.length > 0
    ? h`<h2>Services</h2>${table(
        ['Service', 'Type', 'State', 'Tools', 'Restarts', 'Last error'],
        s.services.map((v) =>
          row([
            v.name,
            v.type,
            cell(v.state, 'status'),
            v.tools ?? '',
            v.restarts,
            cell(v.lastError ?? '', 'wrap'),
          ]),
        ),
      )}`
    : ''
}
${
  s.credentials && s.credentials.length > 0
    ? h`<h2>Credentials</h2>${table(
        ['Credential', 'Kind', 'Upstream', 'Value', 'Groups', 'Last use'],
        s.credentials.map((c) =>
          row([
            c.name,
            c.kind,
            cell(c.upstream, 'wrap'),
            cell(c.value, 'status'),
            c.groups.join(', '),
            c.last ? h`${f.at(c.last.at)} (${c.last.status})` : '',
          ]),
        ),
      )}`
    : ''
}
<h2>Delivery and approvals</h2>
<p>Outbox: ${s.outboxPending} pending, ${s.outboxDead} dead-lettered. Approvals waiting: ${s.approvalsPending}.</p>
${
  s.outboxFailing.length > 0
    ? table(
        ['Piece', 'Group', 'Begins', 'Attempts', 'Last error'],
        s.outboxFailing.map((o) =>
          row([o.id, o.groupId ?? '', cell(o.begins, 'wrap'), o.attempts, cell(o.lastError ?? '', 'wrap')]),
        ),
      )
    : ''
}
${
  s.database
    ? h`<h2>Database</h2><p>${mb(s.database.bytes)} (WAL ${mb(s.database.walBytes)}); rows: ${Object.entries(
        s.database.rows,
      )
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}.</p>`
    : ''
}
<h2>Doctor</h2>
${doctorPart(checks, doctor)}`;
}
