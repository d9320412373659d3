import type { Logger } from '../logging/logger.ts';
import type { Store } from '../store/store.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import {
  adminCommandReplyKey,
  createAdminCommandHandler,
  type AdminCommandHandler,
  type AdminCommandHandlerDeps,
} from './admin-command-handler.ts';
import type { AdminChats } from './admin-chats.ts';
import { isOwnerMessage } from './owner-check.ts';
import type { SpendView } from './spend-view.ts';

export interface AdminCommandsWiringDeps extends Pick<
  AdminCommandHandlerDeps,
  'approvals' | 'cancelTask' | 'webLogin' | 'redact' | 'remember'
> {
  store: Pick<Store, 'audit'>;
  spend: Pick<SpendView, 'text'>;
  adminChats: Pick<AdminChats, 'notify'>;
  enqueue(item: NewOutboxItem): void;
  logger: Logger;
}

/**
 * The owner's commands in an admin chat: the answer goes back to the chat the command came from, whichever
 * channel that is, and a decision is told in the other admin chats.
 */
export function wireAdminCommands(deps: AdminCommandsWiringDeps): AdminCommandHandler {
  return createAdminCommandHandler({
    approvals: deps.approvals,
    usage: (groupId) => deps.spend.text(groupId === undefined ? {} : { groupId }),
    ...(deps.cancelTask ? { cancelTask: deps.cancelTask } : {}),
    isOwnerMessage,
    reply: (text, group, m) =>
      deps.enqueue({
        idempotencyKey: adminCommandReplyKey(m),
        groupId: group.id,
        channel: m.channel,
        chatId: m.chatId,
        runId: null,
        text,
      }),
    onDecided: (text, m) =>
      deps.adminChats.notify(`decided:${adminCommandReplyKey(m)}`, `Decided in ${m.channel}: ${text}`, {
        except: { channel: m.channel, chatId: m.chatId },
      }),
    ...(deps.webLogin ? { webLogin: deps.webLogin } : {}),
    ...(deps.remember ? { remember: deps.remember } : {}),
    audit: deps.store.audit,
    redact: deps.redact,
    logger: deps.logger.child({ subsystem: 'admin' }),
  });
}
