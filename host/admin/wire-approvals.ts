import type { Logger } from '../logging/logger.ts';
import type { HostEvents } from '../store/host-events.ts';
import type { Store } from '../store/store.ts';
import type { Clock } from '../time/clock.ts';
import { createApprovalService, type ApprovalService } from './approval-service.ts';
import { approvalActions, approvalNoticeKey } from './approval-message.ts';
import type { Delivery } from './wire-delivery.ts';
import { createWaitingLine } from './waiting-line.ts';

export interface ApprovalsWiringDeps {
  store: Store;
  redact(s: string): string;
  /** `[security] approval_timeout_ms`. */
  timeoutMs: number;
  delivery: Pick<Delivery, 'adminChats' | 'approvalButtons' | 'dispatcher' | 'channelFor'>;
  /** The host's events: a request made, decided, expired or executed is told there (the console follows it). */
  events: HostEvents;
  clock: Clock;
  logger: Logger;
}

/**
 * Human approval in the admin chats: requests go out with buttons, their buttons come off once settled,
 * and the group whose run asked is told it waits for the owner (without what for) until it is settled.
 * Requests of runs that died with the previous host can never be executed: they are closed first.
 */
export function wireApprovals(deps: ApprovalsWiringDeps): ApprovalService {
  const { adminChats, approvalButtons, dispatcher } = deps.delivery;
  const waitingLine = createWaitingLine({
    approvals: deps.store.approvals,
    groups: deps.store.groups,
    outbox: deps.store.outbox,
    enqueue: (item) => dispatcher.enqueue(item),
    channelFor: deps.delivery.channelFor,
    logger: deps.logger.child({ subsystem: 'approvals' }),
  });
  deps.events.on('outbox-delivered', waitingLine.onDelivered);
  const approvals = createApprovalService({
    store: deps.store,
    redact: deps.redact,
    timeoutMs: deps.timeoutMs,
    clock: deps.clock,
    logger: deps.logger.child({ subsystem: 'approvals' }),
    notifyAdmin: async (text, { approvalId }) => {
      adminChats.notify(approvalNoticeKey(approvalId), text, { actions: approvalActions(approvalId) });
      waitingLine.asked(approvalId);
    },
    notifyExpired: (text, { approvalId }) => adminChats.notify(`approval-expired:${approvalId}`, text),
    onChange: (approvalId) => {
      deps.events.emit('approval-changed', approvalId);
      approvalButtons.onChange(approvalId);
      waitingLine.onChange(approvalId);
    },
  });
  approvals.expireOrphans();
  return approvals;
}
