import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Channel } from '../../host/channels/channel.ts';
import { createOutboxDispatcher } from '../../host/channels/outbox-dispatcher.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { createGroupQueue } from '../../host/router/group-queue.ts';
import { createHostEvents } from '../../host/router/host-events.ts';
import { createIngest } from '../../host/router/ingest.ts';
import { createRunExecutor } from '../../host/router/run-executor.ts';
import { openStore } from '../../host/store/store.ts';

export interface RecordingChannel extends Channel {
  sent: { chatId: string; text: string; key: string }[];
  /** Makes the next n sends fail. */
  failNext(n: number): void;
}

export function createRecordingChannel(name = 'test'): RecordingChannel {
  let failures = 0;
  const sent: RecordingChannel['sent'] = [];
  return {
    name,
    textLimit: 4096,
    formattingRules: 'plain text',
    sent,
    failNext(n) {
      failures = n;
    },
    async connect() {},
    async disconnect() {},
    ownsChat: () => true,
    async send(chatId, text, { idempotencyKey }) {
      if (failures > 0) {
        failures -= 1;
        throw new Error('platform unavailable');
      }
      sent.push({ chatId, text, key: idempotencyKey });
    },
    async setTyping() {},
  };
}

/** The real router pieces over a real SQLite file, with the runner of the test's choice. */
export function createRouterHarness(opts: {
  runner: AgentRunner;
  maxConcurrent?: number;
  maxAttempts?: number;
  retryBaseMs?: number;
  dir?: string;
}) {
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-router-'));
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  const logger = pino({ level: 'silent' });
  const events = createHostEvents();
  const channel = createRecordingChannel();
  const dispatcher = createOutboxDispatcher({
    outbox: store.outbox,
    channelFor: (n) => (n === channel.name ? channel : undefined),
    retryBaseMs: 5,
    retryMaxMs: 50,
    onDelivered: (item) => events.emit('outbox-delivered', item),
    logger,
  });
  const executor = createRunExecutor({
    store,
    runner: opts.runner,
    enqueueReply: dispatcher.enqueue,
    events,
    logger,
  });
  const queue = createGroupQueue({
    executor,
    maxConcurrent: opts.maxConcurrent ?? 3,
    maxAttempts: opts.maxAttempts ?? 3,
    retryBaseMs: opts.retryBaseMs ?? 5,
    logger,
  });
  const ingest = createIngest({ store, assistantName: 'Andy', onTriggered: (g) => queue.notify(g), logger });
  let seq = 0;
  return {
    dir,
    store,
    events,
    channel,
    dispatcher,
    queue,
    addGroup(id: string, isAdmin = false) {
      return store.groups.add({ id, channel: channel.name, chatId: `chat-${id}`, name: id, isAdmin });
    },
    /** Delivers an inbound message as a channel would. */
    say(groupId: string, text: string) {
      seq += 1;
      return ingest({
        channel: channel.name,
        chatId: `chat-${groupId}`,
        externalId: `ext-${seq}`,
        senderId: 'u1',
        senderName: 'Alice',
        text,
        sentAt: new Date().toISOString(),
        mentionsBot: false,
        repliesToBot: false,
      });
    },
    /** Resolves once `count` replies have been delivered (driven by delivery events, not polling). */
    delivered(count: number, timeoutMs = 5000): Promise<RecordingChannel['sent']> {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          events.off('outbox-delivered', check);
          reject(new Error(`expected ${count} deliveries, got ${channel.sent.length}`));
        }, timeoutMs);
        function check() {
          if (channel.sent.length < count) return;
          clearTimeout(timer);
          events.off('outbox-delivered', check);
          resolve(channel.sent);
        }
        events.on('outbox-delivered', check);
        check();
      });
    },
    async close() {
      await queue.close('test over');
      await dispatcher.stop();
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
