import { EventEmitter } from 'node:events';
import type { OutboxItem } from './outbox-store.ts';

export interface HostEventMap {
  /** A group's cursor or run state changed. */
  'group-state': [groupId: string];
  'outbox-delivered': [item: OutboxItem];
  /** An approval request was made, decided, expired or executed. */
  'approval-changed': [approvalId: string];
}

export type HostEvents = EventEmitter<HostEventMap>;

export function createHostEvents(): HostEvents {
  const events = new EventEmitter<HostEventMap>();
  // Every connected console client subscribes; the default cap of 10 would warn for no reason.
  events.setMaxListeners(0);
  return events;
}
