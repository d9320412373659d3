import type { GroupRecord } from '../store/groups-store.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import { sendNotices, type NoticeSinks, type RunNotices } from './run-notices.ts';

/**
 * What the host says about a group's spend against its daily cap: the owner is warned at 80 % and told at
 * 100 %, and the group reads one neutral line when it is out of budget. Each is keyed by group and day in
 * the outbox, so it is sent once a day however many requests cross the line, and a host restarted the same
 * day stores nothing twice (the gateway remembers what it told only in memory).
 */

/**
 * A group reached its daily spend cap: one neutral line to the group and one notice to the owner naming the
 * setting, both keyed by group and day, so told once however many runs the cap refuses. The admin group is
 * the owner's: it reads the notice itself, in every admin chat.
 */
export function spendCapNotices(group: GroupRecord, day: string, capMessage: string): RunNotices {
  if (group.isAdmin)
    return {
      group: [],
      owner: {
        key: `spend-cap:${group.id}:${day}`,
        text: `The admin group reached its daily LLM spending cap: ${capMessage}.`,
      },
    };
  const items: NewOutboxItem[] = [
    {
      idempotencyKey: `spend-cap:${group.id}:${day}`,
      groupId: group.id,
      channel: group.channel,
      chatId: group.chatId,
      runId: null,
      text: 'This group reached its daily spending limit; I will answer again tomorrow.',
    },
  ];
  return {
    group: items,
    owner: {
      key: `spend-cap-owner:${group.id}:${day}`,
      text: `Group ${group.id} gets no answers until tomorrow: ${capMessage}.`,
    },
  };
}

/** A group reached the warning share of its cap: the owner alone hears it, once per group and day. */
export function spendWarningNotices(group: GroupRecord, day: string, warning: string): RunNotices {
  return { group: [], owner: { key: `spend-warning-owner:${group.id}:${day}`, text: `Spend: ${warning}.` } };
}

export interface SpendNoticesDeps extends NoticeSinks {
  group(id: string): GroupRecord | undefined;
}

/** The gateway's two spend callbacks, turned into the notices above (a group removed meanwhile hears nothing). */
export function createSpendNotices(deps: SpendNoticesDeps) {
  const send = (groupId: string, notices: (g: GroupRecord) => RunNotices) => {
    const group = deps.group(groupId);
    if (group) sendNotices(notices(group), deps);
  };
  return {
    capReached: (groupId: string, message: string, day: string) =>
      send(groupId, (g) => spendCapNotices(g, day, message)),
    warning: (groupId: string, message: string, day: string) =>
      send(groupId, (g) => spendWarningNotices(g, day, message)),
  };
}
