import { createSqliteUsageStore } from '../../host/gateway/spend/usage-store-sqlite.ts';
import { openStore, type Store } from '../../host/store/store.ts';

export interface HistoryShape {
  groups: number;
  days: number;
  /** Messages per group and day; every `triggerEvery`-th triggers a run with a reply, audit and usage. */
  messagesPerDay: number;
  triggerEvery: number;
  /** The channel the groups live on (the bench's in-process channel, `local` in tests). */
  channel: string;
  /** The end of the seeded history; the first day starts `days` before it. */
  endAt: number;
}

/** The month the issue measured: 1,000 groups, 50 messages a day each, every 5th a trigger. */
export const MONTH_OF_1000_GROUPS: Omit<HistoryShape, 'channel' | 'endAt'> = {
  groups: 1000,
  days: 30,
  messagesPerDay: 50,
  triggerEvery: 5,
};

export const groupIdOf = (i: number) => `g${String(i).padStart(4, '0')}`;
export const chatIdOf = (i: number) => `chat-${i}`;

/**
 * Writes a history through the product's own store API, as a host would have over `days`: each group's
 * messages, and for each trigger a finished run that replied (outbox row delivered with its platform id),
 * three audit rows and a usage row. Cursors end past everything, so nothing is left to answer.
 * Opens the database itself with a clock it moves; close nothing else on the file meanwhile.
 */
export function seedHistory(file: string, shape: HistoryShape): { messages: number; runs: number } {
  let clock = shape.endAt - shape.days * 86_400_000;
  const store = openStore({ file, now: () => new Date(clock) });
  const usage = createSqliteUsageStore(store.db);
  let messages = 0;
  let runs = 0;
  try {
    store.transaction(() => {
      for (let g = 0; g < shape.groups; g++) {
        const id = groupIdOf(g);
        if (!store.groups.get(id))
          store.groups.add({ id, channel: shape.channel, chatId: chatIdOf(g), name: id, isAdmin: false });
      }
    });
    const step = 86_400_000 / (shape.messagesPerDay * shape.groups);
    for (let day = 0; day < shape.days; day++) {
      const dayName = new Date(clock).toISOString().slice(0, 10);
      store.transaction(() => {
        for (let n = 0; n < shape.messagesPerDay; n++) {
          for (let g = 0; g < shape.groups; g++) {
            clock += step;
            const at = new Date(clock).toISOString();
            runs += seedOne(
              store,
              usage,
              shape,
              g,
              `${dayName}-${n}`,
              n % shape.triggerEvery === 0,
              dayName,
              at,
            );
            messages += 1;
          }
        }
      });
      // As the host's memory indexer does while it runs: the day's messages into the index.
      while (!store.memory.backfillStep(10_000).done);
    }
  } finally {
    store.close();
  }
  return { messages, runs };
}

function seedOne(
  store: Store,
  usage: ReturnType<typeof createSqliteUsageStore>,
  shape: HistoryShape,
  g: number,
  key: string,
  triggers: boolean,
  day: string,
  at: string,
): number {
  const groupId = groupIdOf(g);
  const chatId = chatIdOf(g);
  const id = store.messages.insert({
    groupId,
    channel: shape.channel,
    chatId,
    externalId: `seed-${key}`,
    senderId: 'u1',
    senderName: 'Ann',
    text: triggers ? `@Andy question ${key}` : `chatter ${key}`,
    sentAt: at,
    triggers,
  });
  if (!triggers || id === undefined) return 0;
  const run = store.runs.start(groupId, 1, id);
  store.runs.markAcked(run.id, id);
  store.audit.record({ runId: run.id, groupId, operation: 'run.start', decision: 'allow' });
  store.audit.record({ runId: run.id, groupId, operation: 'bash', decision: 'allow', reason: 'ls' });
  store.outbox.add({
    idempotencyKey: `run:${run.id}:1`,
    groupId,
    channel: shape.channel,
    chatId,
    runId: run.id,
    text: `answer ${key}`,
  });
  const outboxId = store.outbox.highWater(shape.channel, chatId);
  store.outbox.markSent(outboxId, { channel: shape.channel, chatId, platformIds: [`p${outboxId}`] });
  store.runs.markReplied(run.id, id, true);
  store.runs.finish(run.id, 'succeeded', 'completed');
  store.groups.advanceCursor(groupId, id);
  store.audit.record({ runId: run.id, groupId, operation: 'run.end', decision: 'succeeded' });
  usage.recordUsage({
    runId: String(run.id),
    groupId,
    day,
    model: 'gpt-test',
    promptTokens: 900,
    completionTokens: 100,
    costMicros: 1200,
  });
  return 1;
}
