import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';

/**
 * Runs left "running" by a host that died cannot be resumed (their containers died with it). A run that
 * had already replied is closed as answered for what it had acknowledged when it last replied, so those
 * messages are not answered twice; later ones, and all of a run that never replied, are run again.
 * Returns the groups that still have triggering messages to answer.
 */
export function recoverInterruptedRuns(store: Store, logger: Logger): string[] {
  for (const run of store.runs.running()) {
    store.transaction(() => {
      store.runs.finish(run.id, 'interrupted', 'host stopped during the run');
      if (run.replied) store.groups.advanceCursor(run.groupId, run.repliedThrough);
    });
    logger.warn(
      { runId: run.id, groupId: run.groupId, replied: run.replied },
      'run interrupted by a host restart',
    );
  }
  return store.messages.groupsWithPendingTriggers();
}
