import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Channel, ChannelHost, ChannelStatus, SendOutcome } from '../../host/channels/channel.ts';
import { createAdminChats } from '../../host/admin/admin-chats.ts';
import { createDeliveryOutcomes } from '../../host/channels/delivery-outcomes.ts';
import { createOutboxDispatcher } from '../../host/channels/outbox-dispatcher.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { createGroupQueue } from '../../host/router/group-queue.ts';
import { createHostEvents } from '../../host/store/host-events.ts';
import { createIngest } from '../../host/router/ingest.ts';
import { createRunExecutor } from '../../host/router/run-executor.ts';
import { openStore } from '../../host/store/store.ts';
import { capStatusOver } from './cap-status.ts';
import type { Clock } from '../../host/time/clock.ts';

export interface RecordingChannel extends Channel {
  sent: { chatId: string; text: string; key: string; platformIds: string[] }[];
  /** Makes the next n sends answer "retry later". */
  failNext(n: number): void;
  /** The outcome of the next send (to `chatId`, or to any chat), before any "delivered". */
  answerNext(outcome: Exclude<SendOutcome, { kind: 'delivered' }>, chatId?: string): void;
  /** Sets the status the channel reports (and tells the host, once started). */
  setStatus(state: ChannelStatus['state'], reason?: string): void;
  /** What the host handed the channel at start (ingest, isOwnMessage…). */
  host(): ChannelHost | undefined;
}

/** A channel double that keeps what it was asked to send and answers what the test scripts. */
export function createRecordingChannel(name = 'test'): RecordingChannel {
  const scripted: { outcome: Exclude<SendOutcome, { kind: 'delivered' }>; chatId?: string }[] = [];
  const sent: RecordingChannel['sent'] = [];
  let host: ChannelHost | undefined;
  let status: ChannelStatus = { state: 'stopped', reason: 'not started', since: new Date().toISOString() };
  let seq = 0;
  const channel: RecordingChannel = {
    name,
    textLimit: 4096,
    sent,
    failNext(n) {
      for (let i = 0; i < n; i += 1)
        scripted.push({ outcome: { kind: 'retry', reason: 'platform unavailable' } });
    },
    answerNext(outcome, chatId) {
      scripted.push({ outcome, chatId });
    },
    setStatus(state, reason) {
      status = { state, ...(reason ? { reason } : {}), since: new Date().toISOString() };
      host?.onStatus(status);
    },
    host: () => host,
    async start(h) {
      host = h;
      channel.setStatus('connected');
    },
    async stop() {
      channel.setStatus('stopped', 'stopped by the host');
      host = undefined;
    },
    status: () => status,
    async send({ chatId, text, idempotencyKey }) {
      const at = scripted.findIndex((s) => s.chatId === undefined || s.chatId === chatId);
      if (at >= 0) return scripted.splice(at, 1)[0]!.outcome;
      seq += 1;
      const platformIds = [`${name}-msg-${seq}`];
      sent.push({ chatId, text, key: idempotencyKey, platformIds });
      return { kind: 'delivered', platformIds };
    },
    async setTyping() {},
    adminChatId: () => undefined,
  };
  return channel;
}

/** Where the harness's host notices to the owner (dead letters) are delivered. */

/** The real router pieces over a real SQLite file, with the runner of the test's choice. */
export function createRouterHarness(opts: {
  runner: AgentRunner;
  maxConcurrent?: number;
  maxAttempts?: number;
  retryBaseMs?: number;
  /** The queue's retry timers (default: the system clock). */
  queueClock?: Pick<Clock, 'setTimer'>;
  /** `[gateway]` settings for the spend cap the router checks before a run (default: the defaults). */
  gateway?: Record<string, unknown>;
  /** The instant whose UTC day the cap counts on (default: now). */
  capNow?: () => number;
  dir?: string;
}) {
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-router-'));
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  const logger = pino({ level: 'silent' });
  const events = createHostEvents();
  const channel = createRecordingChannel();
  // The owner's notices go through the host's own notifier: to the admin group's chat, when there is one.
  const adminChats = createAdminChats({
    groups: store.groups,
    channels: () => [channel],
    notifyChannels: () => undefined,
    enqueue: (item) => dispatcher.enqueue(item),
  });
  const notifyOwner = (key: string, text: string) => adminChats.notify(key, text);
  const outcomes = createDeliveryOutcomes({
    store,
    notifyOwner,
    logger,
  });
  const dispatcher = createOutboxDispatcher({
    outbox: store.outbox,
    channelFor: (n) => (n === channel.name ? channel : undefined),
    retryBaseMs: 5,
    retryMaxMs: 50,
    onDelivered: (item) => events.emit('outbox-delivered', item),
    onDeadLetter: outcomes.onDeadLetter,
    onChatMoved: outcomes.onChatMoved,
    logger,
  });
  const executor = createRunExecutor({
    store,
    runner: opts.runner,
    capStatus: capStatusOver(store.db, opts.gateway, opts.capNow),
    enqueueReply: dispatcher.enqueue,
    notifyOwner,
    events,
    logger,
  });
  const queue = createGroupQueue({
    executor,
    maxConcurrent: opts.maxConcurrent ?? 3,
    maxAttempts: opts.maxAttempts ?? 3,
    retryBaseMs: opts.retryBaseMs ?? 5,
    ...(opts.queueClock ? { clock: opts.queueClock } : {}),
    logger,
  });
  const ingest = createIngest({
    store,
    assistantName: () => 'Andy',
    onTriggered: (g) => queue.notify(g),
    logger,
  });
  let seq = 0;
  return {
    dir,
    store,
    events,
    channel,
    dispatcher,
    queue,
    executor,
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
        fromOwner: false,
        origin: { kind: 'own' },
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
