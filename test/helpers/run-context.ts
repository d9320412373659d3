import type { AgentRunner, RunContext } from '../../host/router/agent-runner.ts';
import type { GroupRecord } from '../../host/store/groups-store.ts';

/** A stored group for runner tests: a local chat of its own, no taint, on the gateway network. */
export function rigGroup(id: string, overrides: Partial<GroupRecord> = {}): GroupRecord {
  return {
    id,
    channel: 'local',
    chatId: id,
    name: id,
    isAdmin: false,
    networkMode: 'gateway',
    agentCursor: 0,
    createdAt: new Date().toISOString(),
    taint: { corruption: false, secret: false },
    ...overrides,
  };
}

/** A run's context: one triggering message from Ann. */
export function rigRun(runId: number, group: GroupRecord, text: string): RunContext {
  return {
    runId,
    attempt: 1,
    group,
    messages: [
      {
        id: runId,
        groupId: group.id,
        channel: 'local',
        chatId: group.id,
        externalId: `m${runId}`,
        senderId: 'ann',
        senderName: 'Ann',
        text,
        sentAt: new Date().toISOString(),
        triggers: true,
      },
    ],
  };
}

/** Starts `ctx` on `runner`, collecting its replies. */
export function startRigRun(runner: AgentRunner, ctx: RunContext) {
  const replies: string[] = [];
  const handle = runner.start(ctx, {
    reply: async (t) => void replies.push(t),
    sendToGroup: async () => undefined,
  });
  return { runId: ctx.runId, replies, handle };
}
