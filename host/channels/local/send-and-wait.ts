import { setTimeout as sleep } from 'node:timers/promises';
import { isUnansweredNoticeKey } from '../notice-keys.ts';
import type { ConsoleEvent } from './local-api.ts';
import { newClientMessageId } from './local-api.ts';
import { HostUnreachable, type LocalClient } from './local-client.ts';

export interface SendOptions {
  client: LocalClient;
  group: string;
  text: string;
  timeoutMs: number;
  /** For an owner command: print only the host's answer, not other replies arriving meanwhile. */
  onlyCommandAnswer?: boolean;
  onReply(text: string): void;
}

export type SendResult =
  | { kind: 'answered'; replies: number }
  /**
   * The last reply was the host's notice that the message could not be answered, or that its run stopped
   * after a partial answer (progress messages) without finishing.
   */
  | { kind: 'failed'; replies: number }
  /** The host refused the message at the group's daily spend cap; `reason` names the cap and its setting. */
  | { kind: 'refused'; replies: number; reason: string }
  | { kind: 'not-triggered' }
  | { kind: 'timeout'; replies: number };

/**
 * Sends one message and waits until the group's cursor has passed it and every reply queued for the chat
 * has been delivered. Survives a host restart: the message id is chosen here (re-sending is a no-op) and
 * the event stream resumes after the last reply seen, dropping keys already printed.
 */
export async function sendAndWait({
  client,
  group,
  text,
  timeoutMs,
  onlyCommandAnswer = false,
  onReply,
}: SendOptions): Promise<SendResult> {
  const deadline = Date.now() + timeoutMs;
  const clientMessageId = newClientMessageId();
  // Not retried: if the host cannot be reached now, it is not running, and saying so beats waiting.
  const posted = await client.postMessage({ group, text, clientMessageId });
  const commandKey = posted.commandReplyKey;
  if (!posted.triggered && !posted.duplicate && commandKey === null) return { kind: 'not-triggered' };
  const messageId = posted.messageId ?? Number.MAX_SAFE_INTEGER;

  const seen = new Set<string>();
  let lastKey: string | undefined;
  let after = posted.after;
  let done = false;
  let refusedFor: string | undefined;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), Math.max(0, deadline - Date.now()));
  const onEvent = (e: ConsoleEvent) => {
    if (e.type === 'reply') {
      after = Math.max(after, e.outboxId);
      if (seen.has(e.key)) return;
      seen.add(e.key);
      lastKey = e.key;
      if (!onlyCommandAnswer || e.key === commandKey) onReply(e.text);
      // An owner command has exactly one answer: the host's, under the key it told us.
      if (e.key === commandKey) {
        done = true;
        controller.abort();
      }
    } else if (commandKey === null && e.cursor >= messageId && e.pendingOutbox === 0) {
      // The cap's line reaches the chat once a day; the refusal of this very message is in the state.
      const refusal = e.capRefusal;
      if (refusal && refusal.after < messageId && messageId <= refusal.through) refusedFor = refusal.reason;
      done = true;
      controller.abort();
    }
  };
  try {
    while (!done && !controller.signal.aborted) {
      try {
        await client.events(group, after, onEvent, controller.signal);
      } catch (err) {
        if (!(err instanceof HostUnreachable)) throw err;
      }
      if (!done && !controller.signal.aborted)
        await sleep(200, undefined, { signal: controller.signal }).catch(() => {});
    }
  } finally {
    clearTimeout(timer);
  }
  if (!done) return { kind: 'timeout', replies: seen.size };
  if (refusedFor !== undefined) return { kind: 'refused', replies: seen.size, reason: refusedFor };
  return lastKey !== undefined && isUnansweredNoticeKey(lastKey)
    ? { kind: 'failed', replies: seen.size }
    : { kind: 'answered', replies: seen.size };
}
