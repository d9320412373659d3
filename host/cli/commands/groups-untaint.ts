import type { Store } from '../../store/store.ts';
import type { TaskRecord } from '../../store/tasks-store.ts';
import { UsageError } from '../cli-context.ts';

export interface UntaintDecisions {
  /** Tasks the owner vouches for: they keep running and no longer pass a taint on. */
  keep: readonly string[];
  /** Tasks the owner does not trust: cancelled. */
  cancel: readonly string[];
}

function describeTask(t: TaskRecord): string {
  const prompt = t.prompt.length > 200 ? `${t.prompt.slice(0, 199)}…` : t.prompt;
  return `  ${t.id}  group ${t.groupId}, ${t.status}, created by run ${t.createdByRun ?? '-'}: ${JSON.stringify(prompt)}`;
}

/**
 * Clears a group's standing taint. A tainted run may have planted tasks whose prompts steer every later
 * run (and whose firings would taint the group again), so clearing is refused until the owner has decided
 * about each open task created while the group was tainted: keep it (and clear its taint) or cancel it.
 */
export function untaintGroup(store: Store, groupId: string, decisions: UntaintDecisions): string[] {
  const pending = store.tasks.taintedOf(groupId);
  const decided = new Set([...decisions.keep, ...decisions.cancel]);
  const both = decisions.keep.filter((id) => decisions.cancel.includes(id));
  if (both.length > 0) throw new UsageError(`task ${both.join(', ')} cannot be both kept and cancelled`);
  const pendingIds = new Set(pending.map((t) => t.id));
  const unknown = [...decided].filter((id) => !pendingIds.has(id));
  if (unknown.length > 0) {
    throw new UsageError(
      `${unknown.join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not an open task created while ${groupId} was tainted`,
    );
  }
  const undecided = pending.filter((t) => !decided.has(t.id));
  if (undecided.length > 0) {
    throw new UsageError(
      `${groupId} has ${undecided.length} open task(s) created while it was tainted; their prompts may have been planted. ` +
        `Decide about each with --keep <task id> (it keeps running, trusted) or --cancel <task id>, then run this again:\n` +
        undecided.map(describeTask).join('\n'),
    );
  }
  const lines: string[] = [];
  store.transaction(() => {
    for (const id of decisions.cancel) {
      store.tasks.cancel(id);
      store.audit.record({
        groupId,
        operation: 'task.cancel',
        decision: 'allowed',
        approver: 'owner',
        reason: 'cancelled while clearing the group taint',
        details: { taskId: id },
      });
      lines.push(`cancelled task ${id}`);
    }
    for (const id of decisions.keep) {
      store.tasks.clearTaint(id);
      store.audit.record({
        groupId,
        operation: 'task.untaint',
        decision: 'allowed',
        approver: 'owner',
        reason: 'kept while clearing the group taint',
        details: { taskId: id },
      });
      lines.push(`kept task ${id}; it no longer passes a taint on`);
    }
    store.groups.clearTaint(groupId);
    store.audit.record({
      groupId,
      operation: 'group.untaint',
      decision: 'allowed',
      approver: 'owner',
      reason: 'cleared from the CLI',
      details: { kept: decisions.keep, cancelled: decisions.cancel },
    });
  });
  return lines;
}
