import type { Logger } from '../logging/logger.ts';
import type { Store } from '../store/store.ts';
import { sendNotices, unfinishedNotices, type NoticeSinks } from './run-notices.ts';

/**
 * Runs left "running" by a host that died cannot be resumed (their containers died with it). A run that
 * had already replied is closed as answered for what it had acknowledged when it last replied, so those
 * messages are not answered twice, and, when what it sent last was a progress note rather than its answer,
 * its group is told the answer was not finished (once: the notice is keyed by run); later messages, and
 * all of a run that never replied, are run again.
 * Returns the groups that still have triggering messages to answer.
 */
export function recoverInterruptedRuns(store: Store, logger: Logger, notices: NoticeSinks): string[] {
  for (const run of store.runs.running()) {
    const reason = 'the host stopped during the run';
    store.transaction(() => {
      store.runs.finish(run.id, 'interrupted', reason);
      if (!run.replied) return;
      store.groups.advanceCursor(run.groupId, run.repliedThrough);
      const group = store.groups.get(run.groupId);
      if (group && !run.lastReplyFinal) sendNotices(unfinishedNotices(group, run.id, reason), notices);
    });
    logger.warn(
      { runId: run.id, groupId: run.groupId, replied: run.replied },
      'run interrupted by a host restart',
    );
  }
  return store.messages.groupsWithPendingTriggers();
}
