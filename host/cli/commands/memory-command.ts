import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDataDirs } from '../../config/paths.ts';
import { createMemoryNotes } from '../../memory/memory-notes.ts';
import type { MemoryHit } from '../../store/memory-store.ts';
import { openStore, type Store } from '../../store/store.ts';
import { UsageError, type CliContext } from '../cli-context.ts';
import { memoryUsage } from '../command-usage.ts';

function groupOf(store: Store, id: string | undefined) {
  if (!id) throw new UsageError(`name the group\n${memoryUsage}`);
  const group = store.groups.get(id);
  if (!group) throw new UsageError(`there is no group "${id}" (carapace groups list names them)`);
  return group;
}

function hitLine(h: MemoryHit): string {
  if (h.kind === 'document')
    // Forgotten with the message that carried it.
    return `message:${h.messageId}\t${h.at}\tdocument ${h.fileName || '(unnamed)'} sent by ${h.senderName} (${h.senderId})\n  ${h.snippet.replace(/\s+/g, ' ')}`;
  const who =
    h.kind === 'message'
      ? `${h.senderName} (${h.senderId})${h.fromOwner ? ', owner' : ''}`
      : `note by ${h.author}${h.runId === null ? '' : ` in run ${h.runId}`}${h.taint.corruption ? ', tainted' : ''}`;
  return `${h.kind}:${h.id}\t${h.at}\t${who}\n  ${h.snippet.replace(/\s+/g, ' ')}`;
}

/**
 * The owner's view of each group's memory: search it, list and show notes, forget a note or a message
 * (the message leaves the history too), and rebuild the index from the messages and note files.
 */
export async function memoryCommand(ctx: CliContext, args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      json: { type: 'boolean', default: false },
      sender: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      limit: { type: 'string' },
    },
  });
  ensureDataDirs(ctx.paths);
  const store = openStore({ file: ctx.paths.databaseFile });
  const notes = createMemoryNotes({
    memory: store.memory,
    groupDir: (id) => path.join(ctx.paths.groupsDir, id),
  });
  const print = (value: unknown, text: () => void) => (values.json ? ctx.out(JSON.stringify(value)) : text());
  try {
    switch (sub) {
      case 'search': {
        const group = groupOf(store, positionals[0]);
        const query = positionals.slice(1).join(' ');
        if (!query) throw new UsageError(`give words to search for\n${memoryUsage}`);
        const hits = store.memory.search(group.id, {
          text: query,
          ...(values.sender ? { sender: values.sender } : {}),
          ...(values.since ? { since: new Date(values.since).toISOString() } : {}),
          ...(values.until ? { until: new Date(values.until).toISOString() } : {}),
          limit: values.limit ? Number(values.limit) : 20,
        });
        print(hits, () => {
          if (hits.length === 0) ctx.out('Nothing found.');
          for (const h of hits) ctx.out(hitLine(h));
        });
        return 0;
      }
      case 'list': {
        const group = groupOf(store, positionals[0]);
        const list = store.memory.notes(group.id);
        print(list, () => {
          if (list.length === 0) ctx.out(`Group ${group.id} has no notes.`);
          for (const n of list)
            ctx.out(
              `note:${n.id}\t${n.writtenAt}\t${n.author}\t${n.path}\t${n.text.split('\n')[0]?.slice(0, 80)}`,
            );
        });
        return 0;
      }
      case 'show': {
        const id = /^note:(\d+)$/.exec(positionals[0] ?? '')?.[1];
        const note = id ? store.memory.note(Number(id)) : undefined;
        if (!note)
          throw new UsageError(`no such note: give note:<id> as list or search shows it\n${memoryUsage}`);
        print(note, () => {
          ctx.out(`${note.path} in group ${note.groupId}, written ${note.writtenAt} by ${note.author}`);
          ctx.out(note.text);
        });
        return 0;
      }
      case 'forget': {
        const group = groupOf(store, positionals[0]);
        const ref = /^(note|message):(\d+)$/.exec(positionals[1] ?? '');
        if (!ref) throw new UsageError(`give note:<id> or message:<id>\n${memoryUsage}`);
        const id = Number(ref[2]);
        const gone =
          ref[1] === 'note'
            ? await notes.forget(group.id, id)
            : store.db.prepare('DELETE FROM messages WHERE id = ? AND group_id = ?').run(id, group.id)
                .changes > 0;
        if (!gone) {
          ctx.err(`group ${group.id} has no ${ref[0]}`);
          return 1;
        }
        store.audit.record({
          groupId: group.id,
          operation: 'memory.forget',
          decision: 'allowed',
          reason: `${ref[0]} forgotten by the owner`,
          approver: 'owner',
        });
        ctx.out(`Forgot ${ref[0]}.`);
        return 0;
      }
      case 'reindex': {
        // Note files first (an owner's edit by hand), then the index rebuilt from messages and notes.
        for (const group of store.groups.list()) {
          const whoCouldWrite = {
            corruption: !group.isAdmin || group.taint.corruption,
            secret: group.taint.secret,
          };
          const synced = await notes
            .syncFromFiles(group.id, whoCouldWrite)
            .catch(() => ({ changed: 0, removed: 0 }));
          if (synced.changed + synced.removed > 0)
            ctx.out(`${group.id}: ${synced.changed} notes changed on disk, ${synced.removed} removed`);
        }
        store.memory.resetIndex();
        let progress = store.memory.backfillProgress();
        while (!progress.done) {
          progress = store.memory.backfillStep(2000);
          if (!values.json)
            ctx.out(
              `indexed through message ${Math.min(progress.nextId - 1, progress.through)} of ${progress.through}`,
            );
        }
        const check = store.memory.check();
        print(check, () =>
          ctx.out(check.ok ? 'Memory index rebuilt and checked.' : check.problems.join('\n')),
        );
        return check.ok ? 0 : 1;
      }
      default:
        throw new UsageError(memoryUsage);
    }
  } finally {
    store.close();
  }
}
