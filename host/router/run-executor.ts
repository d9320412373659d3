import type { CapStatus } from '../gateway/spend/cap-status.ts';
import type { Logger } from '../logging/logger.ts';
import type { Store } from '../store/store.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { NewOutboxItem, OutboxAttachment } from '../store/outbox-store.ts';
import type { AgentRunner, RunOutcome } from './agent-runner.ts';
import type { HostEvents } from '../store/host-events.ts';
import { giveUpNotices, sendNotices, unfinishedNotices, type FailureKind } from './run-notices.ts';
import { spendCapNotices } from './spend-notices.ts';
import { errorMessage } from '../errors/error-message.ts';
import { answerShownAs, draftCallbacks, type RunDraftsFactory } from './run-drafts.ts';

export type RunEnd =
  | { kind: 'succeeded' }
  /** `replied` runs are never retried: a second run would answer the same messages again. */
  | {
      kind: 'failed';
      replied: boolean;
      retryable: boolean;
      /** What the group is told when it gives up (see run-notices.ts). */
      failure: FailureKind;
      reason: string;
      givenThrough: number;
    };

export interface ActiveRun {
  readonly groupId: string;
  readonly runId: number;
  /** Hands messages stored since the last hand-over to the running agent. */
  offerNewMessages(): void;
  stop(reason: string): void;
  readonly finished: Promise<RunEnd>;
}

/** Messages of a group refused at its daily spend cap: those after `after`, through `through`. */
export interface CapRefusal {
  after: number;
  through: number;
  /** The cap, the group and the setting that raises it. */
  reason: string;
}

export interface RunExecutorDeps {
  store: Store;
  runner: AgentRunner;
  /**
   * The group's daily spend cap as it stands now (`createCapStatus`): a group at it gets no run, since
   * the gateway would admit none of its requests.
   */
  capStatus(groupId: string): CapStatus;
  /** Must write synchronously (it is called inside store transactions) and deliver later. */
  enqueueReply(item: NewOutboxItem): void;
  /** A notice for the owner in every admin chat; must write synchronously too. */
  notifyOwner(key: string, text: string): void;
  events: HostEvents;
  logger: Logger;
  /** A run's draft streams, when its answers may stream (run-drafts.ts); absent: no run streams. */
  draftsFor?: RunDraftsFactory;
}

/** One run's lifecycle against the database: what it is given, what it acknowledged, how the cursor moves. */
export function createRunExecutor({
  store,
  runner,
  capStatus,
  enqueueReply,
  notifyOwner,
  events,
  logger,
  draftsFor,
}: RunExecutorDeps) {
  const sinks = { enqueue: enqueueReply, notifyOwner };
  // Each group's latest refusal at the cap, for the console's clients waiting on a message (`carapace
  // send`); kept in memory, as those clients wait on this host.
  const capRefusals = new Map<string, CapRefusal>();

  /**
   * The messages through `through` get no answer today: the group reads the cap's line (once a day, by its
   * key) in the same transaction that moves the cursor past them.
   */
  const refuseAtCap = (group: GroupRecord, through: number, cap: CapStatus) => {
    const after = store.groups.get(group.id)?.agentCursor ?? group.agentCursor;
    store.transaction(() => {
      store.groups.advanceCursor(group.id, through);
      sendNotices(spendCapNotices(group, cap.day, cap.message), sinks);
    });
    capRefusals.set(group.id, { after, through, reason: cap.message });
    logger.info({ groupId: group.id, after, through }, 'messages refused at the spend cap');
    events.emit('group-state', group.id);
  };

  return {
    hasPending(groupId: string): boolean {
      const group = store.groups.get(groupId);
      return !!group && store.messages.latestTriggerAfter(groupId, group.agentCursor) !== undefined;
    },

    /** Starts a run for the group's pending messages; undefined when there is none to start. */
    start(groupId: string, attempt: number): ActiveRun | undefined {
      const group = store.groups.get(groupId);
      const latestTrigger = group && store.messages.latestTriggerAfter(group.id, group.agentCursor);
      if (!group || latestTrigger === undefined) return undefined;
      const cap = capStatus(group.id);
      if (cap.reached) {
        // No request of the group would be admitted: a container started now could only fail. Later context
        // stays for tomorrow's run.
        refuseAtCap(group, latestTrigger, cap);
        return undefined;
      }
      const messages = store.messages.after(group.id, group.agentCursor);
      let given = messages[messages.length - 1]?.id ?? group.agentCursor;
      // The admin group is one conversation over every admin chat the owner linked: its replies go to the
      // chat the owner wrote from last. Any other group has one chat.
      let replyChat = group.isAdmin ? lastChatOf(messages, group) : group;
      let acked = group.agentCursor;
      let replies = 0;
      const run = store.runs.start(group.id, attempt, given);
      const log = logger.child({ runId: run.id, groupId: group.id, attempt });
      log.info({ messages: messages.length, through: given }, 'run started');
      const ack = (through: number) => {
        acked = Math.max(acked, through);
        store.runs.markAcked(run.id, acked);
      };

      // A run may only send while it runs: an approval granted after its end must not speak for it.
      let ended = false;
      const startThrough = given;
      const send = (
        target: GroupRecord,
        text: string,
        final = false,
        attachment?: OutboxAttachment,
        shownAs?: string,
      ) => {
        if (ended) throw new Error('the run has ended; nothing more is sent for it');
        // The agent answers run.start before it can say anything, but that answer may still be a queued
        // microtask here: a message from the run proves the start batch was taken in.
        ack(startThrough);
        replies += 1;
        const item = {
          idempotencyKey: `run:${run.id}:${replies}`,
          groupId: target.id,
          channel: target.channel,
          chatId: target.chatId,
          runId: run.id,
          text,
          ...(attachment ? { attachment } : {}),
        };
        // One transaction, so "replied" is never recorded without the message or the reverse. Any message
        // counts, to this chat or another: a retried run would send it again. A streamed answer is stored
        // as sent, by the draft message it became, so no delivery (nor one after a restart) sends it twice.
        store.transaction(() => {
          if (shownAs === undefined) enqueueReply(item);
          else store.outbox.addDelivered(item, [shownAs]);
          store.runs.markReplied(run.id, acked, final);
        });
      };
      // Decided once, at the start: run.start tells the agent whether to send drafts at all.
      const draftChat = group.isAdmin ? { ...group, ...replyChat } : group;
      const drafts = draftsFor?.(run.id, draftChat);
      const handle = runner.start(
        { runId: run.id, attempt, group, messages, ...(drafts ? { drafts: true } : {}) },
        {
          // A group's chat can move while its run is active (a Telegram group that became a supergroup):
          // the run's later replies go where the group is now, not where it was when the run started.
          reply: async (text, options) => {
            const target = group.isAdmin ? { ...group, ...replyChat } : (store.groups.get(group.id) ?? group);
            const shownAs =
              options?.final === true && !options.attachment && !ended
                ? await answerShownAs(drafts, text, target.chatId === draftChat.chatId)
                : undefined;
            send(target, text, options?.final === true, options?.attachment, shownAs);
          },
          ...draftCallbacks(drafts, () => ended),
          sendToGroup: async (groupId: string, text: string) => {
            const target = store.groups.get(groupId);
            if (!target) throw new Error(`there is no group "${groupId}"`);
            send(target, text);
          },
        },
      );
      handle.accepted
        .then(() => ack(startThrough))
        .catch((err: unknown) => {
          if (!ended) log.warn({ err: errorMessage(err) }, 'the agent did not take in its start messages');
        });

      const finished = handle.done
        .catch((err: unknown): RunOutcome => ({
          ok: false,
          reason: `runner error: ${errorMessage(err)}`,
        }))
        .then((outcome): RunEnd => {
          ended = true;
          // An answer streamed but never sent as the run's reply (the run failed, or its answer was what
          // send_message had already posted) is taken back: only a reviewed reply stays.
          void drafts?.finish({ kind: 'refused' });
          const record = store.runs.get(run.id);
          const replied = record?.replied ?? false;
          const failure: FailureKind = outcome.withheld
            ? 'withheld'
            : outcome.capped
              ? 'capped'
              : outcome.transient
                ? 'transient'
                : outcome.retryable === false
                  ? 'final'
                  : 'retryable';
          store.transaction(() => {
            store.runs.finish(run.id, outcome.ok ? 'succeeded' : 'failed', outcome.reason);
            // A success covers everything the agent took in. A failure after a reply covers only what it
            // had taken in when it last spoke: later follow-ups get a new run instead of being dropped.
            if (outcome.ok) store.groups.advanceCursor(group.id, acked);
            else if (replied) {
              store.groups.advanceCursor(group.id, record?.repliedThrough ?? group.agentCursor);
              // A request refused at the cap left something it had taken in unanswered: the cap's line
              // says why (once a day). Otherwise a progress note the group read may look like the whole
              // answer: say it is not, once, with the run's end; after the answer there is nothing to add.
              if (outcome.capped) {
                const cap = capStatus(group.id);
                sendNotices(spendCapNotices(group, cap.day, cap.message), sinks);
                // Cut off before its answer: what it had taken in was refused, as far as a client can tell.
                if (!record?.lastReplyFinal)
                  capRefusals.set(group.id, {
                    after: group.agentCursor,
                    through: record?.repliedThrough ?? group.agentCursor,
                    reason: cap.message,
                  });
              } else if (!record?.lastReplyFinal)
                sendNotices(unfinishedNotices(group, run.id, outcome.reason), sinks);
            }
          });
          const end: RunEnd = outcome.ok
            ? { kind: 'succeeded' }
            : {
                kind: 'failed',
                replied,
                retryable: failure === 'retryable',
                failure,
                reason: outcome.reason,
                givenThrough: given,
              };
          log.info({ outcome: outcome.reason, ok: outcome.ok, replied, ackedThrough: acked }, 'run ended');
          events.emit('group-state', group.id);
          return end;
        });

      return {
        groupId: group.id,
        runId: run.id,
        offerNewMessages() {
          const fresh = store.messages.after(group.id, given);
          const last = fresh[fresh.length - 1];
          if (!last) return;
          given = last.id;
          if (group.isAdmin) replyChat = lastChatOf(fresh, replyChat);
          store.runs.markGiven(run.id, given);
          handle
            .input(fresh)
            .then((accepted) => {
              if (accepted) ack(last.id);
            })
            .catch((err: unknown) => log.warn({ err: errorMessage(err) }, 'follow-up not handed over'));
        },
        stop: (reason: string) => handle.stop(reason),
        finished,
      };
    },

    /** The group's latest messages refused at its cap since this host started, if any. */
    capRefusal(groupId: string): CapRefusal | undefined {
      return capRefusals.get(groupId);
    },

    /**
     * After the last attempt failed: tell the group, and move past the messages so they do not loop
     * forever. The reason (provider error texts, configuration hints, paths) is for the owner: the admin
     * chat reads it as is, any other group gets a neutral apology and the admin chat the reason.
     */
    giveUp(groupId: string, end: Extract<RunEnd, { kind: 'failed' }>): void {
      const group = store.groups.get(groupId);
      if (!group) return;
      if (end.failure === 'capped') {
        refuseAtCap(group, end.givenThrough, capStatus(group.id));
        return;
      }
      const notices = giveUpNotices({
        group,
        givenThrough: end.givenThrough,
        kind: end.failure,
        reason: end.reason,
      });
      // Notice and cursor move together: no observer may see the messages passed without the notice queued.
      store.transaction(() => {
        store.groups.advanceCursor(group.id, end.givenThrough);
        sendNotices(notices, sinks);
      });
      events.emit('group-state', group.id);
    },
  };
}

export type RunExecutor = ReturnType<typeof createRunExecutor>;

function lastChatOf(
  messages: readonly { channel: string; chatId: string }[],
  fallback: { channel: string; chatId: string },
): { channel: string; chatId: string } {
  const last = messages[messages.length - 1] ?? fallback;
  return { channel: last.channel, chatId: last.chatId };
}
