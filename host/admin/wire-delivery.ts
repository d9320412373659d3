import type { Logger } from '../logging/logger.ts';
import type { Channel } from '../channels/channel.ts';
import { createDeliveryOutcomes } from '../channels/delivery-outcomes.ts';
import { createOutboxDispatcher, type OutboxDispatcherDeps } from '../channels/outbox-dispatcher.ts';
import type { HostEvents } from '../store/host-events.ts';
import type { Store } from '../store/store.ts';
import type { Clock } from '../time/clock.ts';
import { createAdminChats } from './admin-chats.ts';
import { createApprovalButtons } from './approval-buttons.ts';

export interface DeliveryDeps {
  store: Store;
  /** The started channel of that name, if any. */
  channelFor(name: string): Channel | undefined;
  /** The started channels, read at each notice. */
  channels(): Iterable<Channel>;
  /** `[admin] notify`, read at each notice. */
  notifyChannels(): readonly string[] | undefined;
  /** `[outbox]`: the retry times and the connection drops a piece may cause. */
  retry: Pick<OutboxDispatcherDeps, 'retryBaseMs' | 'retryMaxMs' | 'maxConnectionDrops'>;
  /** The host's events: a delivered piece is told there (the console follows it). */
  events: HostEvents;
  clock: Clock;
  logger: Logger;
}

/**
 * Delivery to the chats: the outbox dispatcher, what it does about dead and moved chats, the owner's admin
 * chats (notices go through the outbox too), and approval buttons taken off once their request is settled.
 * The four call each other, so they are built together.
 */
export function wireDelivery(deps: DeliveryDeps) {
  const { store, clock } = deps;
  const adminChats = createAdminChats({
    groups: store.groups,
    channels: deps.channels,
    notifyChannels: deps.notifyChannels,
    enqueue: (item) => dispatcher.enqueue(item),
  });
  const outcomes = createDeliveryOutcomes({
    store,
    notifyOwner: (key, text) => adminChats.notify(key, text),
    logger: deps.logger.child({ subsystem: 'outbox' }),
  });
  const dispatcher = createOutboxDispatcher({
    outbox: store.outbox,
    channelFor: deps.channelFor,
    ...deps.retry,
    clock,
    onDelivered: (item) => {
      approvalButtons.onDelivered(item);
      deps.events.emit('outbox-delivered', item);
    },
    onDeadLetter: outcomes.onDeadLetter,
    onChatMoved: outcomes.onChatMoved,
    logger: deps.logger.child({ subsystem: 'outbox' }),
  });
  // A settled request's buttons come off in every chat they were shown in, however it was settled.
  const approvalButtons = createApprovalButtons({
    outbox: store.outbox,
    channelFor: deps.channelFor,
    isOpen: (id) => store.approvals.get(id)?.status === 'pending',
    clock,
    logger: deps.logger.child({ subsystem: 'approvals' }),
  });
  return { adminChats, outcomes, dispatcher, approvalButtons, channelFor: deps.channelFor };
}

export type Delivery = ReturnType<typeof wireDelivery>;
