import type { z } from 'zod';
import {
  LIMITS,
  RPC_ERROR_CODES,
  type configProposeParamsSchema,
  type configProposeResultSchema,
  type configReadResultSchema,
  type HostMethods,
  type runDoneParamsSchema,
} from '../../container-agent/src/protocol.ts';
import { RpcError } from '../../container-agent/src/rpc/errors.ts';
import type { RpcHandlers } from '../../container-agent/src/rpc/peer.ts';
import { servingDomain, servingDomainHandlers } from './domain-error-codes.ts';
import type { RunCallbacks } from '../router/agent-runner.ts';
import type { OutboundFile, OutboundFiles } from '../router/media/outbound-file.ts';
import type { TaskHandlers } from '../scheduler/task-handlers.ts';
import type { BashReport, BashReportOutcome } from '../security/taint/bash-reports.ts';
import type { BashDecision, RunIdentity, Verdict } from '../security/decisions.ts';
import type { FileReadReport } from '../security/taint/secret-reads.ts';
import { fenceStrangerText } from '../services/untrusted-fence.ts';
import type { MemoryHandlers } from '../memory/memory-handlers.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { GroupsStore } from '../store/groups-store.ts';
import { errorMessage } from '../errors/error-message.ts';

export type RunDone = z.infer<typeof runDoneParamsSchema>;

export interface HostHandlerDeps {
  identity: RunIdentity;
  callbacks: RunCallbacks;
  groups: GroupsStore;
  audit: AuditStore;
  onDone(done: RunDone): void;
  /** The host's decision on a command the in-container gate escalated. */
  bashCheck(identity: RunIdentity, command: string): Promise<BashDecision>;
  /** Audits a command the agent is about to run; a gate miss stops the run (see bash-reports.ts). */
  bashRan(identity: RunIdentity, report: BashReport): BashReportOutcome;
  /** A file tool is about to read this path: taints the run when it lies in a mount that held secrets. */
  fileRead(identity: RunIdentity, report: FileReadReport): void;
  /** Stops this run, and tells its group why (not retried). */
  stopRun(reason: string): void;
  /** Host services (web_fetch, …); refusals throw a DomainError, given its protocol code here. */
  callService(identity: RunIdentity, service: string, params: unknown, tool?: string): Promise<unknown>;
  /** Whether a chat message (and the bytes of its file) may go out (secrets, private text, taint); may ask the owner. */
  reviewMessage(identity: RunIdentity, text: string, to: string, file?: Buffer): Promise<Verdict>;
  /** Host-mutating operations (register a group, …): the Cop, then the owner on a flag. */
  reviewMutation(identity: RunIdentity, operation: string, params: Record<string, unknown>): Promise<Verdict>;
  /** Throws, saying why, when the channel is unknown or not configured or the chat id has the wrong shape. */
  checkRegistration(channel: string, chatId: string): void;
  /** The task.* methods, built for the same run identity (see host/scheduler/task-handlers.ts). */
  tasks: TaskHandlers;
  /** Marks the run as having read text strangers wrote (group names and chat titles). */
  taint: { markCorrupted(runId: number): void };
  /** config.toml for the admin agent: read redacted, change through review and the owner (config-proposals.ts). */
  config: ConfigHandlers;
  /** memory.search|remember|forget, built for the same run identity (host/memory/memory-handlers.ts). */
  memory?: MemoryHandlers;
  /** Files sent with message.send: read from the group folder, copied where the container cannot reach. */
  outboundFiles?: OutboundFiles;
}

/**
 * What the message policy reviews for a message with a file: the text, the file named, and a text file's
 * content (scanned for secrets like the message, and shown to the owner if they are asked).
 */
function reviewedText(text: string, file: OutboundFile | undefined): string {
  if (!file) return text;
  const named = `${text}\n\n[attached file ${file.fileName} (${file.mime}, ${file.bytes.byteLength} bytes)]`;
  return file.text === undefined ? named : `${named}\n${file.text}`;
}

export interface ConfigHandlers {
  read(): Promise<z.infer<typeof configReadResultSchema>>;
  propose(
    identity: RunIdentity,
    proposal: z.infer<typeof configProposeParamsSchema>,
  ): Promise<z.infer<typeof configProposeResultSchema>>;
}

/**
 * Requests that may cost an LLM review or a question to the owner, in flight at once per run: the agent
 * works one tool call at a time, so more than this is a container trying to flood the Cop or the admin chat.
 */
const MAX_REVIEWED_IN_FLIGHT = 2;

const noMemory = async (): Promise<never> => {
  throw new RpcError(RPC_ERROR_CODES.internal, 'memory is not available on this host');
};
const unavailableMemory: MemoryHandlers = {
  'memory.search': noMemory,
  'memory.remember': noMemory,
  'memory.forget': noMemory,
  'document.text': async () => undefined,
};

const forbidden = (message: string) => new RpcError(RPC_ERROR_CODES.forbidden, message);

/**
 * The container → host methods of one run. Every authorization below is decided from `identity`;
 * fields in the params only say what the container asks for. Each decision is audited.
 */
export function createHostHandlers(deps: HostHandlerDeps): RpcHandlers<HostMethods> {
  const { identity, callbacks, groups, audit } = deps;
  const { group, runId } = identity;
  const record = (operation: string, decision: string, reason: string, details?: unknown) =>
    audit.record({ runId, groupId: group.id, operation, decision, reason, details });
  let inFlight = 0;
  const limited = async <T>(operation: string, fn: () => Promise<T>): Promise<T> => {
    if (inFlight >= MAX_REVIEWED_IN_FLIGHT) {
      record(operation, 'denied', `more than ${MAX_REVIEWED_IN_FLIGHT} reviewed requests in flight`);
      throw new RpcError(
        RPC_ERROR_CODES.denied,
        'too many requests waiting for review; wait for the answers first',
      );
    }
    inFlight += 1;
    try {
      return await fn();
    } finally {
      inFlight -= 1;
    }
  };
  const adminOnly = (operation: string, details?: unknown) => {
    if (group.isAdmin) return;
    record(operation, 'denied', 'only the admin group may do this', details);
    throw forbidden(`${operation} is only allowed in the admin group`);
  };

  return {
    async 'message.send'({ text, to, final, attachment }) {
      const own = to === undefined || to === group.id;
      if (!own && !group.isAdmin) {
        record('message.send', 'denied', 'a non-admin group may only write to its own chat', { to });
        throw forbidden('this group may only send messages to its own chat');
      }
      if (!own && !groups.get(to))
        throw new RpcError(RPC_ERROR_CODES.invalidParams, `there is no group "${to}"`);
      let file: OutboundFile | undefined;
      if (attachment) {
        if (!own || !deps.outboundFiles)
          throw new RpcError(RPC_ERROR_CODES.invalidParams, 'a file can only be sent to the run’s own chat');
        const read = await deps.outboundFiles.read(group.id, attachment.path);
        if (!read.ok) {
          record('message.send', 'denied', `file not sent: ${read.reason}`, { attachment: attachment.path });
          throw new RpcError(RPC_ERROR_CODES.invalidParams, `not sent: ${read.reason}`);
        }
        file = read.file;
      }
      const verdict = await limited('message.send', () =>
        // A text file is reviewed as text (above); any other file's bytes are opened for private text.
        deps.reviewMessage(
          identity,
          reviewedText(text, file),
          own ? group.id : to,
          ...(file && file.text === undefined ? [file.bytes] : []),
        ),
      );
      if (!verdict.allowed) {
        if (own) await callbacks.replyRefused?.();
        throw new RpcError(RPC_ERROR_CODES.denied, `message not sent: ${verdict.reason}`);
      }
      if (own) {
        const staged = file && deps.outboundFiles ? await deps.outboundFiles.stage(file) : undefined;
        await callbacks.reply(text, { final: final === true, ...(staged ? { attachment: staged } : {}) });
        return { queued: true };
      }
      await callbacks.sendToGroup(to, text);
      return { queued: true };
    },

    async 'group.list'() {
      adminOnly('group.list');
      const list = groups.list();
      // Other groups' names come from their chats (titles anyone there can change): fenced, and tainting.
      if (list.some((g) => !g.isAdmin)) deps.taint.markCorrupted(identity.runId);
      return {
        groups: list.map((g) => ({
          id: g.id,
          name: g.isAdmin ? g.name : fenceStrangerText(`the name of group ${g.id}`, g.name, LIMITS.name),
          channel: g.channel,
          isAdmin: g.isAdmin,
        })),
      };
    },

    async 'group.register'(params) {
      adminOnly('group.register', params);
      try {
        deps.checkRegistration(params.channel, params.chatId);
      } catch (err) {
        throw new RpcError(RPC_ERROR_CODES.invalidParams, errorMessage(err));
      }
      if (groups.get(params.id) || groups.findByChat(params.channel, params.chatId)) {
        throw new RpcError(
          RPC_ERROR_CODES.invalidParams,
          `group "${params.id}" or chat ${params.channel}:${params.chatId} is already registered`,
        );
      }
      const verdict = await limited('group.register', () =>
        deps.reviewMutation(identity, 'group.register', params),
      );
      if (!verdict.allowed) {
        record('group.register', 'denied', verdict.reason, params);
        throw new RpcError(RPC_ERROR_CODES.denied, `not registered: ${verdict.reason}`);
      }
      groups.add({
        id: params.id,
        channel: params.channel,
        chatId: params.chatId,
        name: params.name,
        isAdmin: false,
      });
      record('group.register', 'allowed', verdict.reason, params);
      return { ok: true };
    },

    async 'security.bash_check'({ command }) {
      return limited('bash', () => deps.bashCheck(identity, command));
    },

    async 'file.read'(report) {
      deps.fileRead(identity, report);
    },

    async 'run.draft'({ text }) {
      // To the run's draft stream, which gates and throttles it (host/router/draft-stream.ts); a run
      // that does not stream has none, and the draft is dropped.
      callbacks.draft?.(text);
    },

    async 'bash.ran'(report) {
      const outcome = deps.bashRan(identity, report);
      if (outcome.missed) deps.stopRun(outcome.reason);
    },

    async 'service.call'({ service, tool, params }) {
      return {
        result: await limited(`service.${service}`, () =>
          servingDomain(() => deps.callService(identity, service, params, tool)),
        ),
      };
    },

    async 'config.read'() {
      adminOnly('config.read');
      return deps.config.read();
    },

    async 'config.propose'(params) {
      adminOnly('config.propose', { reason: params.reason, changes: params.changes });
      return limited('config.propose', () => deps.config.propose(identity, params));
    },

    ...servingDomainHandlers(deps.tasks),

    ...(deps.memory ?? unavailableMemory),

    async 'run.done'(done) {
      deps.onDone(done);
      return { ok: true };
    },
  };
}
