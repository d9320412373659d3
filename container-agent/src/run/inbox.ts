/**
 * Chat messages that arrive during a run (run.input). Once the agent decides to finish, the inbox
 * closes and refuses more, so the host starts a new run for them instead of losing them.
 */
import type { ChatMessage } from '../protocol.ts';

export interface Inbox {
  /** False when closed: the caller must not consider the messages taken in. */
  offer(messages: readonly ChatMessage[]): boolean;
  take(): ChatMessage[];
  hasPending(): boolean;
  close(): void;
  readonly closed: boolean;
}

export function createInbox(): Inbox {
  let queue: ChatMessage[] = [];
  let closed = false;
  return {
    offer(messages) {
      if (closed) return false;
      queue.push(...messages);
      return true;
    },
    take() {
      const taken = queue;
      queue = [];
      return taken;
    },
    hasPending() {
      return queue.length > 0;
    },
    close() {
      closed = true;
    },
    get closed() {
      return closed;
    },
  };
}
