import { parseArgs } from 'node:util';
import { hostStatus, type HostStatus, type PrestartStatus } from '../../channels/local/local-api.ts';
import { HostUnreachable } from '../../channels/local/local-client.ts';
import { hostClientWithin, timeoutSeconds } from '../host-client.ts';
import { openStoreReadOnly } from '../../store/read-only-store.ts';
import type { CliContext } from '../cli-context.ts';
import fs from 'node:fs';
import { errorMessage } from '../../errors/error-message.ts';

/** "pre-started containers: 1 of 2 ready (main 27 MiB), memory 27 MiB of 256 MiB, stopped after 600 s unused" */
export function describePrestart(p: PrestartStatus): string {
  if (p.count === 0) return 'pre-started containers: off ([runs.prestart] count = 0)';
  const mib = (n: number) => `${Math.round(n)} MiB`;
  const used = p.containers.reduce((sum, c) => sum + (c.memoryMb ?? 0), 0);
  const each = p.containers.map(
    (c) => `${c.groupId} ${c.memoryMb === null ? 'not measured yet' : mib(c.memoryMb)}`,
  );
  return (
    `pre-started containers: ${p.containers.length} of ${p.count} ready` +
    (each.length ? ` (${each.join(', ')})` : '') +
    `, memory ${mib(used)} of ${mib(p.memoryMb)}, stopped after ${Math.round(p.idleMs / 1000)} s unused`
  );
}

/** `failing: reply #12 to group fam (whatsapp 1203…@g.us) "Here is the…": 2 attempts, 2 took the connection down; last: …` */
function describeFailing(f: HostStatus['outboxFailing'][number]): string {
  const to = `${f.groupId ? `group ${f.groupId} ` : ''}(${f.channel} ${f.chatId})`;
  const drops = f.connectionDrops ? `, ${f.connectionDrops} took the connection down` : '';
  return (
    `failing: reply #${f.id} to ${to} "${f.begins}": ${f.attempts} attempt${f.attempts === 1 ? '' : 's'}${drops}` +
    `; last: ${f.lastError ?? 'no reason recorded'}`
  );
}

/** "database: 740 MiB (WAL 4 MiB); about 1500000 messages, 300000 runs, … ([retention] prunes old ones)" */
export function describeDatabase(d: NonNullable<HostStatus['database']>): string {
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  const r = d.rows;
  return (
    `database: ${mib(d.bytes)} (WAL ${mib(d.walBytes)}); about ${r.messages} messages, ${r.runs} runs, ` +
    `${r.outbox} replies, ${r.audit} audit rows, ${r.usage} usage rows ([retention] prunes old history)`
  );
}

export async function statusCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { json: { type: 'boolean', default: false }, timeout: { type: 'string', default: '10' } },
  });
  const client = hostClientWithin(ctx, timeoutSeconds(values.timeout) * 1000);
  let live: HostStatus | undefined;
  try {
    live = hostStatus.parse(await client.getJson('/v1/status'));
  } catch (err) {
    if (!(err instanceof HostUnreachable)) throw err;
  }
  let stored: { runs: unknown[]; outboxPending: number } | undefined;
  if (fs.existsSync(ctx.paths.databaseFile)) {
    // Read-only: status needs no write access to the data folder and never holds up a running host.
    try {
      const store = openStoreReadOnly(ctx.paths.databaseFile);
      try {
        stored = { runs: store.runs.recent(10), outboxPending: store.outbox.pendingCount() };
      } finally {
        store.close();
      }
    } catch (err) {
      ctx.err(`could not read ${ctx.paths.databaseFile}: ${errorMessage(err)}`);
    }
  }
  if (values.json) {
    ctx.out(
      JSON.stringify({ running: live !== undefined, host: live ?? null, recentRuns: stored?.runs ?? [] }),
    );
    return live ? 0 : 1;
  }
  if (!live) ctx.out(`host: not running (data folder ${ctx.paths.dataDir}); start it with: carapace start`);
  else {
    const h = live;
    ctx.out(`host: running (pid ${h.pid}, since ${h.startedAt})`);
    // status is a client of the host and reads no config: the runner is the one the running host chose.
    if (h.runner !== undefined) ctx.out(`runner: ${h.runner}`);
    ctx.out(
      `runs: ${h.queue.active.length} active, ${h.queue.waiting.length} waiting, ${h.queue.retrying.length} waiting to retry`,
    );
    ctx.out(
      `outbox: ${h.outboxPending} repl${h.outboxPending === 1 ? 'y' : 'ies'} waiting for delivery` +
        (h.outboxDead ? `, ${h.outboxDead} dead-lettered (carapace doctor lists them)` : ''),
    );
    for (const f of h.outboxFailing) ctx.out(`  ${describeFailing(f)}`);
    for (const c of h.channels) {
      ctx.out(
        `channel ${c.name}: ${c.state}${c.reason ? ` (${c.reason})` : ''}${c.adminChat ? `, admin chat ${c.adminChat}` : ''}`,
      );
    }
    if (h.approvalsPending > 0) {
      ctx.out(
        `approvals: ${h.approvalsPending} waiting for you (send "pending" in the admin chat to see them)`,
      );
    }
    if (h.prestart) ctx.out(describePrestart(h.prestart));
    for (const s of h.services ?? []) {
      ctx.out(
        `service ${s.name} (${s.type}): ${s.state}` +
          (s.tools === null ? '' : `, ${s.tools} tool${s.tools === 1 ? '' : 's'}`) +
          (s.container ? `, container ${s.container}` : '') +
          (s.restarts ? `, restarted ${s.restarts}×` : '') +
          (s.lastError ? `, last error: ${s.lastError}` : ''),
      );
    }
    for (const c of h.credentials ?? []) {
      ctx.out(
        `credential ${c.name} (${c.kind} ${c.upstream}): value ${c.value}` +
          `, groups: ${c.groups.join(', ') || 'none'}` +
          (c.last === null
            ? ', not used since start'
            : c.last.status === 0
              ? `, last request at ${c.last.at} could not reach it`
              : `, last request at ${c.last.at} answered HTTP ${c.last.status}`),
      );
    }
    if (h.database) ctx.out(describeDatabase(h.database));
    ctx.out(describeGroups(h.groups));
  }
  for (const r of (stored?.runs ?? []) as {
    id: number;
    groupId: string;
    status: string;
    exitReason: string | null;
    startedAt: string;
  }[]) {
    ctx.out(`  run ${r.id}\t${r.groupId}\t${r.status}\t${r.startedAt}\t${r.exitReason ?? ''}`);
  }
  return live ? 0 : 1;
}

/** One group a line, aligned: a host with many groups stays readable. */
export function describeGroups(
  groups: readonly { id: string; channel: string; admin: boolean; openTasks: number }[],
): string {
  const idWidth = Math.max(0, ...groups.map((g) => g.id.length));
  const channelWidth = Math.max(0, ...groups.map((g) => g.channel.length));
  const lines = groups.map((g) => {
    const notes = [
      ...(g.admin ? ['admin'] : []),
      ...(g.openTasks ? [`${g.openTasks} scheduled task${g.openTasks === 1 ? '' : 's'}`] : []),
    ];
    return `  ${g.id.padEnd(idWidth)}  ${g.channel.padEnd(channelWidth)}  ${notes.join(', ')}`.trimEnd();
  });
  return [`groups (${groups.length}):`, ...lines].join('\n');
}
