import { parseArgs } from 'node:util';
import { hostStatus, type HostStatus } from '../../channels/local/local-api.ts';
import { createLocalClient, HostUnreachable } from '../../channels/local/local-client.ts';
import { openStore } from '../../store/store.ts';
import type { CliContext } from '../cli-context.ts';
import fs from 'node:fs';

export async function statusCommand(ctx: CliContext, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } } });
  let live: HostStatus | undefined;
  try {
    live = hostStatus.parse(
      await createLocalClient({ socketFile: ctx.paths.socketFile, pidFile: ctx.paths.pidFile }).getJson(
        '/v1/status',
      ),
    );
  } catch (err) {
    if (!(err instanceof HostUnreachable)) throw err;
  }
  let stored: { runs: unknown[]; outboxPending: number } | undefined;
  if (fs.existsSync(ctx.paths.databaseFile)) {
    const store = openStore({ file: ctx.paths.databaseFile });
    try {
      stored = { runs: store.runs.recent(10), outboxPending: store.outbox.pendingCount() };
    } finally {
      store.close();
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
    ctx.out(
      `runs: ${h.queue.active.length} active, ${h.queue.waiting.length} waiting, ${h.queue.retrying.length} waiting to retry`,
    );
    ctx.out(
      `outbox: ${h.outboxPending} repl${h.outboxPending === 1 ? 'y' : 'ies'} waiting for delivery` +
        (h.outboxDead ? `, ${h.outboxDead} dead-lettered (carapace doctor lists them)` : ''),
    );
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
    ctx.out(
      `groups: ${h.groups
        .map(
          (g) =>
            `${g.id} (${g.channel}${g.openTasks ? `, ${g.openTasks} scheduled task${g.openTasks === 1 ? '' : 's'}` : ''})`,
        )
        .join(', ')}`,
    );
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
