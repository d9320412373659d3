import type { Logger } from '../logging/logger.ts';
import type { InboundMessage } from '../channels/channel.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import { parseAdminCommand, type AdminCommand } from './admin-commands.ts';
import { formatPendingList } from './approval-message.ts';
import type { ApprovalService } from './approval-service.ts';
import { errorMessage } from '../errors/error-message.ts';

export interface AdminCommandHandlerDeps {
  approvals: Pick<ApprovalService, 'decide' | 'pending'>;
  /** The spend report as text (`usage`, `usage <group>`); absent: the command says it is not available. */
  usage?(groupId: string | undefined): string;
  /**
   * Cancels any group's task (`cancel <task id>`) and says what happened; `by` is the owner's channel id.
   * Undefined when there is no such task: then the words were conversation ("cancel payments"), not a command.
   */
  cancelTask?(taskId: string, by: string): string | undefined;
  /**
   * Whether the sender is the owner, from channel metadata the host trusts (never from message text).
   * Channel-agnostic: `isOwnerMessage` (the adapter's `fromOwner`). A throw counts as "not the owner".
   */
  isOwnerMessage(m: InboundMessage, group: GroupRecord): boolean;
  /** Answers in the admin chat the command came from; `command` gives an idempotency key (its externalId). */
  reply(text: string, group: GroupRecord, command: InboundMessage): void | Promise<void>;
  /**
   * A one-time sign-in link to the web console for the owner who asked (`web login`); undefined when the
   * console is off.
   */
  webLogin?(issuedTo: string): { url: string; expiresAt: string } | undefined;
  /**
   * The owner's "remember that …" in any chat: `parse` gives the note's text when the message is one, `write`
   * stores it for the group and gives the answer. Absent: the words stay conversation.
   */
  remember?: {
    parse(text: string, group: GroupRecord): string | undefined;
    write(groupId: string, text: string): Promise<string>;
  };
  /** A decision was taken (approve or deny): the other admin chats are told what happened. */
  onDecided?(text: string, command: InboundMessage): void;
  audit: Pick<AuditStore, 'record'>;
  /** Removes held secrets from the `pending` listing. */
  redact: (s: string) => string;
  logger: Logger;
}

/** How a refusal names the command: approvals are the ones that matter, the rest are admin commands. */
const commandsLike = (command: AdminCommand) =>
  command.kind === 'approve' || command.kind === 'deny' || command.kind === 'pending'
    ? 'approval commands'
    : 'admin commands';

/** What the audit says an ignored approval attempt tried; the operation column is this constant. */
export const IGNORED_COMMAND_OPERATION = 'admin.command';

/** A consumed command; `brief` is what an approve or deny did, in a word or two (DecideResult.brief). */
export interface AdminCommandDone {
  brief?: string;
}

/**
 * Handles the owner's admin commands. Call `handle` for every inbound message of a registered group before it
 * is stored or triggers a run: an object means the message was a command and is done with. A command from any
 * chat but an admin group, or from anyone but the owner, is not consumed (it stays an ordinary message) and
 * is audited as an ignored attempt: approvals come only from the owner in the admin chat.
 */
export function createAdminCommandHandler({
  approvals,
  isOwnerMessage,
  reply,
  audit,
  redact,
  logger,
  onDecided,
  usage,
  cancelTask,
  webLogin,
  remember,
}: AdminCommandHandlerDeps) {
  const send = (text: string, group: GroupRecord, m: InboundMessage) => {
    void Promise.resolve()
      .then(() => reply(text, group, m))
      .catch((err: unknown) => logger.error({ err, groupId: group.id }, 'could not answer an admin command'));
  };

  const ownerSent = (m: InboundMessage, group: GroupRecord): boolean => {
    try {
      return isOwnerMessage(m, group) === true;
    } catch (err) {
      logger.error({ err, groupId: group.id }, 'owner check failed; treating the sender as not the owner');
      return false;
    }
  };

  const ignore = (
    m: InboundMessage,
    group: GroupRecord | undefined,
    command: AdminCommand,
    reason: string,
  ) => {
    audit.record({
      groupId: group?.id ?? null,
      operation: IGNORED_COMMAND_OPERATION,
      decision: 'ignored',
      reason,
      approver: `${m.channel}:${m.senderId}`,
      details: {
        command: command.kind,
        approvalId: 'id' in command ? command.id : undefined,
        channel: m.channel,
        chatId: m.chatId,
        senderName: m.senderName,
        externalId: m.externalId,
      },
    });
    logger.warn(
      { groupId: group?.id, senderId: m.senderId, command: command.kind, reason },
      'admin command ignored',
    );
    return false as const;
  };

  return {
    /**
     * A message from a chat that is no group and not the owner's (it is not stored): if it was an admin
     * command, the attempt is audited all the same.
     */
    auditStray(m: InboundMessage): void {
      const command = parseAdminCommand(m.text);
      if (command) ignore(m, undefined, command, `${commandsLike(command)} are only accepted from the owner`);
    },
    handle(m: InboundMessage, group: GroupRecord): false | AdminCommandDone {
      const note = remember?.parse(m.text, group);
      // Anyone else's "remember that …" (a stranger, a forward of the owner's words) is conversation: the
      // agent may still take a note of it, with the taint of whoever said it.
      if (remember && note !== undefined) {
        if (!ownerSent(m, group)) return false;
        void remember
          .write(group.id, note)
          .catch((err: unknown) => {
            logger.error({ err, groupId: group.id }, 'could not write the owner’s note');
            return `Not remembered (${errorMessage(err)}). Try again, or write it with "carapace memory".`;
          })
          .then((text) => send(text, group, m));
        return {};
      }
      const command = parseAdminCommand(m.text);
      if (!command) return false;
      if (command.kind === 'cancel-task' && !group.isAdmin) return false;
      if (!group.isAdmin)
        return ignore(m, group, command, `${commandsLike(command)} are only accepted in the admin chat`);
      if (!ownerSent(m, group))
        return ignore(
          m,
          group,
          command,
          m.fromOwner && m.origin.kind !== 'own'
            ? 'a forwarded command is someone else’s words, not the owner’s command'
            : `${commandsLike(command)} are only accepted from the owner`,
        );
      // From here the message is the owner's command: it never reaches the agent, even if deciding fails.
      try {
        if (command.kind === 'pending') {
          send(formatPendingList(approvals.pending(), redact), group, m);
        } else if (command.kind === 'usage') {
          send(usage ? usage(command.groupId) : 'Spend is not recorded by this host.', group, m);
        } else if (command.kind === 'cancel-task') {
          const answer = cancelTask?.(command.taskId, `${m.channel}:${m.senderId}`);
          if (answer === undefined) return false;
          send(answer, group, m);
        } else if (command.kind === 'web-login') {
          const link = webLogin?.(`${m.channel}:${m.senderId}`);
          send(
            link
              ? `Web console sign-in (works once, until ${link.expiresAt}): ${link.url}`
              : 'The web console is off: set [web] listen = "127.0.0.1:8750" in config.toml and restart.',
            group,
            m,
          );
        } else {
          const decision = approvals.decide(command.id, command.kind, `${m.channel}:${m.senderId}`);
          send(decision.message, group, m);
          if (decision.ok) onDecided?.(decision.message, m);
          return { brief: decision.brief };
        }
      } catch (err) {
        logger.error({ err, command: command.kind }, 'admin command failed');
        send(
          `That command failed (${errorMessage(err)}). Send "pending" to see what is still open.`,
          group,
          m,
        );
      }
      return {};
    },
  };
}

export type AdminCommandHandler = ReturnType<typeof createAdminCommandHandler>;

/**
 * The outbox key of the host's answer to an admin command: stable for the command's message, so a
 * redelivered command never produces a second answer, and a client can wait for exactly this reply.
 */
export function adminCommandReplyKey(m: { channel: string; chatId: string; externalId: string }): string {
  return `admin-command:${m.channel}:${m.chatId}:${m.externalId}`;
}
