import type { Channel } from '../channels/channel.ts';
import type { Logger } from '../logging/logger.ts';
import type { DraftGate } from '../security/policies/draft-gate.ts';
import { initialRunTaint } from '../security/taint/initial-taint.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { Clock } from '../time/clock.ts';
import type { RunCallbacks } from './agent-runner.ts';
import { createDraftStream, type DraftEnding, type DraftStream } from './draft-stream.ts';

/** One run's streamed answers: drafts go into a draft message, the reviewed reply ends it. */
export interface RunDrafts {
  update(text: string): void;
  /** Ends the answer being streamed (a new one may follow in the same run); `not-shown` when none was. */
  finish(review: Parameters<DraftStream['finish']>[0]): Promise<DraftEnding>;
}

export interface RunDraftsDeps {
  channelFor(label: string): Pick<Channel, 'send' | 'editText' | 'unsend' | 'textLimit'> | undefined;
  /** The run's gate (its taint and the secret scanner); undefined: the runtime cannot check drafts. */
  gateFor?(runId: number): DraftGate | undefined;
  clock: Clock;
  logger: Logger;
}

/**
 * Whether a run streams, and its streams if so (DESIGN.md, Streamed answers). A run may stream when the
 * chat its answer goes to (for the admin group: the admin chat the owner wrote from last) is on a channel
 * that can edit a message it sent and take one back, and the runtime gives a gate to check every draft
 * with; otherwise undefined, and run.start tells the agent to send none. The gate then lets only untainted
 * runs show anything, which in practice is the owner's admin chats: any other group's messages are
 * strangers' words, so its runs start corrupted (initial-taint.ts) and their answers arrive whole.
 */
export function createRunDraftsFactory(deps: RunDraftsDeps) {
  return (
    runId: number,
    group: Pick<GroupRecord, 'channel' | 'chatId' | 'isAdmin' | 'taint'>,
  ): RunDrafts | undefined => {
    // Tainted from the start (contains_secrets is left to the gate): it would refuse every draft, so the
    // agent is not asked to stream at all.
    const start = initialRunTaint(group, false);
    if (start.corruption || start.secret) return undefined;
    const channel = deps.channelFor(group.channel);
    const gate = deps.gateFor?.(runId);
    if (!channel?.editText || !channel.unsend || !gate) return undefined;
    let answers = 0;
    let current: DraftStream | undefined;
    return {
      update(text) {
        current ??= createDraftStream({
          channel,
          chatId: group.chatId,
          key: `run-${runId}-${++answers}`,
          gate,
          clock: deps.clock,
          logger: deps.logger,
        });
        current.update(text);
      },
      async finish(review) {
        const stream = current;
        current = undefined;
        return stream ? stream.finish(review) : { kind: 'not-shown' };
      },
    };
  };
}

export type RunDraftsFactory = ReturnType<typeof createRunDraftsFactory>;

/**
 * The run's answer passed the outbound policy: its draft message becomes it, when there is one in the
 * chat the answer goes to. The draft message's platform id when it now shows the answer, else undefined
 * (the answer is sent as usual, and a draft shown of it was taken back).
 */
export async function answerShownAs(
  drafts: RunDrafts | undefined,
  text: string,
  sameChat: boolean,
): Promise<string | undefined> {
  if (!drafts) return undefined;
  const ending = await drafts.finish(sameChat ? { kind: 'approved', text } : { kind: 'refused' });
  return ending.kind === 'edited' ? ending.platformId : undefined;
}

/** What feeds a run's drafts: `run.draft` while the run is on, and a refused answer taking its draft back. */
export function draftCallbacks(
  drafts: RunDrafts | undefined,
  ended: () => boolean,
): Pick<RunCallbacks, 'draft' | 'replyRefused'> {
  if (!drafts) return {};
  return {
    draft: (text) => {
      if (!ended()) drafts.update(text);
    },
    replyRefused: async () => {
      await drafts.finish({ kind: 'refused' });
    },
  };
}
