import { failureNoticeKey, unfinishedNoticeKey } from '../channels/notice-keys.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';

/**
 * What the host tells a group (and the owner) when a run ends without its answer. Every text a non-admin
 * group reads is neutral: reasons hold provider error texts, configuration hints and paths, and a denial
 * must not say why (never "the message contains a GitHub token"), so they go to the admin chat only.
 * Every notice has a key of its own per run or per batch of messages, so the outbox stores it once
 * however many paths (a run ending, the recovery after a host crash) try to.
 */

/**
 * Why a run failed in a way that decides what its group is told: `final` only for what the owner must fix
 * (a refused key, no provider); `transient` for one failure not retried (a provider that hung), which the
 * next message tries again.
 */
export type FailureKind = 'retryable' | 'transient' | 'final' | 'withheld' | 'capped';

/** A notice for the owner: it goes to every admin chat (or those `[admin] notify` names), once each. */
export interface OwnerNotice {
  key: string;
  text: string;
}

/** What a run's end tells: the group's own notices, and the owner's when the group is not the admin group. */
export interface RunNotices {
  group: NewOutboxItem[];
  owner?: OwnerNotice;
}

/** Where notices go: the group's chat through the outbox, the owner's through the admin chats' notifier. */
export interface NoticeSinks {
  /** Must write synchronously: notices are stored in the same transaction as the cursor they explain. */
  enqueue(item: NewOutboxItem): void;
  notifyOwner(key: string, text: string): void;
}

export function sendNotices(notices: RunNotices, sinks: NoticeSinks): void {
  for (const item of notices.group) sinks.enqueue(item);
  if (notices.owner) sinks.notifyOwner(notices.owner.key, notices.owner.text);
}

export interface GiveUpNotice {
  group: GroupRecord;
  givenThrough: number;
  /** A run refused at the spend cap is told the cap's line instead (spend-notices.ts), once a day. */
  kind: Exclude<FailureKind, 'capped'>;
  reason: string;
}

/** The run gave up before it said anything: the messages up to `givenThrough` stay unanswered. */
export function giveUpNotices({ group, givenThrough, kind, reason }: GiveUpNotice): RunNotices {
  const own: Record<GiveUpNotice['kind'], { admin: string; others: string }> = {
    retryable: {
      admin: `Sorry, I could not answer that (${reason}). Send the message again to retry.`,
      others: 'Sorry, I could not answer that. Send the message again to retry.',
    },
    transient: {
      admin: `Sorry, I could not answer that (${reason}). That was one failure, not retried: your next message tries again.`,
      others: 'Sorry, I could not answer that. Send the message again to try once more.',
    },
    final: {
      admin: `I cannot answer yet: ${reason}.`,
      others: 'Sorry, I cannot answer right now. The owner has been told.',
    },
    // Asking again would write the same answer, which the owner would deny again.
    withheld: { admin: `My answer was not sent: ${reason}.`, others: 'Sorry, I cannot answer that.' },
  };
  const items: NewOutboxItem[] = [
    {
      idempotencyKey: failureNoticeKey(group.id, givenThrough),
      groupId: group.id,
      channel: group.channel,
      chatId: group.chatId,
      runId: null,
      text: group.isAdmin ? own[kind].admin : own[kind].others,
    },
  ];
  if (group.isAdmin) return { group: items };
  const outlook = {
    retryable: 'it may ask again',
    transient: 'one failure, not retried; its next message tries again',
    final: 'it cannot be answered until this is fixed',
    withheld: 'its answer was withheld',
  }[kind];
  return {
    group: items,
    owner: {
      key: `giveup-owner:${group.id}:${givenThrough}`,
      text: `Group ${group.id} got no answer (${outlook}): ${reason}`,
    },
  };
}

/**
 * The run said something (a progress note, part of an answer) and then ended without finishing: the group
 * must not take what it read for the whole answer. Not retried (a second run would repeat what was sent),
 * so the group is told it may ask again. Keyed by run: exactly one such notice per run.
 */
export function unfinishedNotices(group: GroupRecord, runId: number, reason: string): RunNotices {
  const items: NewOutboxItem[] = [
    {
      idempotencyKey: unfinishedNoticeKey(runId),
      groupId: group.id,
      channel: group.channel,
      chatId: group.chatId,
      runId: null,
      text: group.isAdmin
        ? `I could not finish that (${reason}). Ask again if you still need the rest.`
        : 'Sorry, I could not finish that. Ask again if you still need the rest.',
    },
  ];
  if (group.isAdmin) return { group: items };
  return {
    group: items,
    owner: {
      key: `unfinished-owner:${runId}`,
      text: `Group ${group.id} got only part of an answer: ${reason}`,
    },
  };
}

/**
 * The provider has not answered the run for a while (the request goes on until the gateway's first-byte
 * deadline): the group learns the run is alive. Keyed by the messages the run answers: once however many
 * requests of the run wait.
 */
export function slowProviderNotices(
  group: GroupRecord,
  run: { id: number; givenThrough: number },
  waitedMs: number,
): RunNotices {
  const seconds = Math.round(waitedMs / 1000);
  const items: NewOutboxItem[] = [
    {
      idempotencyKey: `slow:${group.id}:${run.givenThrough}`,
      groupId: group.id,
      channel: group.channel,
      chatId: group.chatId,
      runId: null,
      text: group.isAdmin
        ? `Still working: the LLM provider has not answered for ${seconds} s.`
        : 'Still working on it, this is taking longer than usual.',
    },
  ];
  // The owner hears of a slow provider only if the run then gives up (its notice names the setting to
  // change); a provider that answers late is the group's wait, not the owner's business.
  return { group: items };
}
