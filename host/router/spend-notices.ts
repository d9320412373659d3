import type { GroupRecord } from '../store/groups-store.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import { sendNotices, type NoticeSinks, type RunNotices } from './run-notices.ts';

/**
 * What the host says about a group's spend against its daily cap: the owner is warned when a settled
 * request brings the group to 80 % of it (or past it), and the group reads one neutral line when a message
 * of its is refused at the cap. Each is keyed by group and day in the outbox, so it is sent once a day
 * however many requests or messages cross the line, and a host restarted the same day stores nothing twice
 * (the gateway remembers what it told only in memory).
 */

/** The group's line at the cap, as the group reads it. */
export const SPEND_CAP_LINE = 'This group reached its daily spending limit; I cannot answer until tomorrow.';

/**
 * A message of the group was refused at its daily spend cap: one neutral line to the group and one notice
 * to the owner naming the setting, both keyed by group and day, so told once however many messages the cap
 * refuses. Never sent for a run that crossed the cap and answered: only a refusal says so. The admin group
 * is the owner's: it reads the notice itself, in every admin chat.
 */
export function spendCapNotices(group: GroupRecord, day: string, capMessage: string): RunNotices {
  if (group.isAdmin)
    return {
      group: [],
      owner: {
        key: `spend-cap:${group.id}:${day}`,
        text: `The admin group reached its daily LLM spending cap, so I cannot answer until tomorrow: ${capMessage}.`,
      },
    };
  const items: NewOutboxItem[] = [
    {
      idempotencyKey: `spend-cap:${group.id}:${day}`,
      groupId: group.id,
      channel: group.channel,
      chatId: group.chatId,
      runId: null,
      text: SPEND_CAP_LINE,
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

/** A group reached the warning share of its cap, or the cap: the owner alone hears it, once per group and day. */
export function spendWarningNotices(group: GroupRecord, day: string, warning: string): RunNotices {
  return { group: [], owner: { key: `spend-warning-owner:${group.id}:${day}`, text: `Spend: ${warning}.` } };
}

export interface SpendNoticesDeps extends NoticeSinks {
  group(id: string): GroupRecord | undefined;
}

/** The gateway's spend warning, turned into the owner's notice above (a group removed meanwhile: nothing). */
export function createSpendNotices(deps: SpendNoticesDeps) {
  return {
    warning: (groupId: string, message: string, day: string) => {
      const group = deps.group(groupId);
      if (group) sendNotices(spendWarningNotices(group, day, message), deps);
    },
  };
}
