import type { OutboxAttachment } from '../store/outbox-store.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { StoredMessage } from '../store/messages-store.ts';

/**
 * The seam between the router and whatever executes an agent turn. The real implementation runs a
 * hardened container; tests may run an in-process double that is never wired into `carapace start`.
 */
export interface AgentRunner {
  start(ctx: RunContext, callbacks: RunCallbacks): RunHandle;
}

export interface RunContext {
  runId: number;
  attempt: number;
  group: GroupRecord;
  /** Every message since the group's cursor, context and triggers alike, oldest first. */
  messages: StoredMessage[];
  /** The host takes drafts of this run's answers (run-drafts.ts decides): run.start says so to the agent. */
  drafts?: boolean;
}

export interface RunCallbacks {
  /**
   * Stores a reply to the run's own chat in the outbox; resolves once it is durable. `final` marks the
   * run's answer (not a progress note): it decides only whether a run cut off later leaves its group a
   * "not finished" notice, never anything of trust.
   */
  reply(text: string, options?: { final?: boolean; attachment?: OutboxAttachment }): Promise<void>;
  /**
   * Stores a message to another group's chat. Only the IPC layer decides whether the run may do this
   * (the admin group may, others may not); this just performs it.
   */
  sendToGroup(groupId: string, text: string): Promise<void>;
  /** The answer so far (`run.draft`), for the run's draft stream; absent when the run does not stream. */
  draft?(text: string): void;
  /**
   * The outbound policy refused the run's answer: a draft shown of it is taken back. Resolves once it is.
   */
  replyRefused?(): Promise<void>;
}

export interface RunHandle {
  /** Resolves once the agent has taken in the start messages: only then may the cursor pass them. */
  readonly accepted: Promise<void>;
  /** Offers follow-up messages; true once the agent took them in, false when it was already finishing. */
  input(messages: StoredMessage[]): Promise<boolean>;
  stop(reason: string): void;
  readonly done: Promise<RunOutcome>;
}

export interface RunOutcome {
  ok: boolean;
  /** Why the run ended: "completed", "timeout", "container exited with 137", … */
  reason: string;
  /** False when trying again cannot help (no engine, no image): the group is told at once. */
  retryable?: boolean;
  /**
   * The owner denied (or let expire) a message of this run: the failure is final, and the group is told
   * neutrally that it gets no answer (asking again would write the same answer, denied again).
   */
  withheld?: boolean;
  /**
   * A request of the run was refused at its group's spend cap: final for today. Its end tells the group
   * and the owner the cap's notices (once per group and day), never a failure notice of its own.
   */
  capped?: boolean;
  /**
   * Failed once in a way that running it again now would only repeat (a provider that hung): not retried,
   * but nothing needs fixing, and the group's next message tries again. Said so, not "until fixed".
   */
  transient?: boolean;
}
