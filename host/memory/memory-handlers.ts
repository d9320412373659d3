import path from 'node:path';
import type { z } from 'zod';
import {
  LIMITS,
  RPC_ERROR_CODES,
  type memoryHitSchema,
  type memoryRememberResultSchema,
  type memorySearchParamsSchema,
} from '../../container-agent/src/protocol.ts';
import { RpcError } from '../../container-agent/src/rpc/errors.ts';
import type { RunIdentity } from '../security/decisions.ts';
import type { Taint } from '../security/taint/taint.ts';
import { fenceStrangerText, sanitizeUntrustedText } from '../services/untrusted-fence.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { MemoryHit, MemoryStore } from '../store/memory-store.ts';
import type { MemoryNotes } from './memory-notes.ts';

type MemoryHitOut = z.input<typeof memoryHitSchema>;

export interface MemoryHandlerDeps {
  identity: RunIdentity;
  memory: Pick<MemoryStore, 'search' | 'messageCarrying' | 'putDocumentText'>;
  notes: Pick<MemoryNotes, 'write' | 'forget'>;
  taint: { get(runId: number): Taint; markCorrupted(runId: number): void; markSecret(runId: number): void };
  audit: Pick<AuditStore, 'record'>;
  /** Where the group's folder is in the container: a reported path is the group's file below it. */
  containerGroupDir: string;
}

/** One line, bounded: a sender's name is theirs to choose. */
function named(name: string): string {
  return sanitizeUntrustedText(name).replace(/\s+/g, ' ').slice(0, 80);
}

function isoOr(at: string): string {
  const t = Date.parse(at);
  return Number.isNaN(t) ? new Date(0).toISOString() : new Date(t).toISOString();
}

/** The hit as the run reads it, and what reading it does to the run's taint. */
export function recalled(hit: MemoryHit): { out: MemoryHitOut; taint: Taint } {
  const room = LIMITS.memoryHitText;
  const body = hit.text.length <= room - 200 ? hit.text : hit.snippet;
  if (hit.kind === 'message') {
    const author = hit.fromOwner ? 'the owner' : `${named(hit.senderName)} (sender ${named(hit.senderId)})`;
    const origin = `a message in this group's chat (${hit.channel})`;
    return {
      out: {
        kind: 'message',
        ref: `message:${hit.id}`,
        author,
        origin,
        at: isoOr(hit.at),
        // A stranger's words stay a stranger's however long ago they were said.
        text: hit.fromOwner
          ? body.slice(0, room)
          : fenceStrangerText(`${author}, recalled from this group's history`, body, room),
      },
      taint: { corruption: !hit.fromOwner, secret: false },
    };
  }
  if (hit.kind === 'document') {
    const sender = `${named(hit.senderName)} (sender ${named(hit.senderId)})`;
    const name = hit.fileName === '' ? 'a document' : `the document ${named(hit.fileName)}`;
    return {
      out: {
        kind: 'document',
        ref: `message:${hit.messageId}`,
        author: `nobody's own words: ${name}, sent by ${sender}`,
        origin: `the text of ${name}, as a run of this group read it (${hit.channel})`,
        at: isoOr(hit.at),
        // Whoever sent it, the owner included: a document is nobody's own words, as read_attachment treats it.
        text: fenceStrangerText(`${name} sent by ${sender}, recalled from this group's history`, body, room),
      },
      taint: hit.taint,
    };
  }
  const author =
    hit.author === 'owner' ? 'the owner' : `the assistant${hit.runId === null ? '' : `, run ${hit.runId}`}`;
  return {
    out: {
      kind: 'note',
      ref: `note:${hit.id}`,
      author,
      origin: `a note in ${hit.path}`,
      at: isoOr(hit.at),
      // A note a corrupted run wrote may hold what the run was made to write: fenced, and corrupting.
      text: hit.taint.corruption
        ? fenceStrangerText(`a note ${author} wrote while it had read untrusted text`, body, room)
        : body.slice(0, room),
    },
    taint: hit.taint,
  };
}

/**
 * memory.search, memory.remember and memory.forget for one run. The group is the run's own, from its
 * identity: nothing in the params can name another group, so another group's memory (the admin group's,
 * a `contains_secrets` group's) is never searched for it.
 */
export function createMemoryHandlers(deps: MemoryHandlerDeps) {
  const { identity } = deps;
  const { group, runId } = identity;
  const record = (operation: string, reason: string, details?: unknown) =>
    deps.audit.record({ runId, groupId: group.id, operation, decision: 'allowed', reason, details });

  return {
    async 'memory.search'(params: z.output<typeof memorySearchParamsSchema>) {
      const hits = deps.memory.search(group.id, {
        text: params.query,
        ...(params.since ? { since: isoOr(params.since) } : {}),
        ...(params.until ? { until: isoOr(params.until) } : {}),
        ...(params.sender ? { sender: params.sender } : {}),
        // What the run was given (the message that asked, its context, anything offered since) is the
        // conversation it is in, not history: the asking message would be its own best hit.
        ...(identity.firstGivenId === undefined ? {} : { throughId: identity.firstGivenId - 1 }),
        limit: params.limit ?? 10,
      });
      const read = hits.map(recalled);
      // Tainted before the words reach the run, as reading the original would have.
      if (read.some((r) => r.taint.corruption)) deps.taint.markCorrupted(runId);
      if (read.some((r) => r.taint.secret)) deps.taint.markSecret(runId);
      record('memory.search', `${hits.length} hits`, {
        query: params.query.slice(0, 200),
        refs: read.map((r) => r.out.ref),
      });
      return { hits: read.map((r) => r.out) };
    },

    async 'memory.remember'({ text }: { text: string }): Promise<z.input<typeof memoryRememberResultSchema>> {
      const taint = deps.taint.get(runId);
      const note = await deps.notes.write({ groupId: group.id, text, author: 'agent', runId, taint });
      record('memory.remember', `note ${note.id} written`, { path: note.path, taint });
      return { ref: `note:${note.id}`, path: note.path };
    },

    /**
     * A document's text as read_attachment read it: kept for search with the message of this group that
     * carried the file (none: not kept), and with the run's secret taint, since the text is the run's report.
     */
    async 'document.text'({ path: real, text }: { path: string; text: string }): Promise<void> {
      const prefix = `${deps.containerGroupDir}/`;
      if (!real.startsWith(prefix)) return;
      const messageId = deps.memory.messageCarrying(
        group.id,
        path.posix.normalize(real.slice(prefix.length)),
      );
      if (messageId === undefined) return;
      const id = deps.memory.putDocumentText({
        groupId: group.id,
        messageId,
        text,
        runId,
        secret: deps.taint.get(runId).secret,
      });
      if (id !== undefined)
        record('memory.document', `document text ${id} kept`, { messageId, chars: text.length });
    },

    async 'memory.forget'({ ref }: { ref: string }) {
      const id = Number(ref.slice('note:'.length));
      const gone = await deps.notes.forget(group.id, id);
      if (!gone) throw new RpcError(RPC_ERROR_CODES.invalidParams, `this group has no note ${ref}`);
      record('memory.forget', `note ${id} forgotten`);
      return { ok: true as const };
    },
  };
}

export type MemoryHandlers = ReturnType<typeof createMemoryHandlers>;
