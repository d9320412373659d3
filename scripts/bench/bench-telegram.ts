/**
 * The Telegram channel's host overhead: from the moment the Bot API's getUpdates answer is written until
 * the run is handed to the runner (a new run's start, or a follow-up handed to a busy group's active run).
 * Everything in between is real: grammY's client, @grammyjs/runner with per-chat lanes, the adapter's
 * normalisation, the durable update offset, ingest, SQLite and the group queue. With 1 chat, and with 50
 * chats busy with long runs receiving a burst of follow-ups (one per chat) in one getUpdates answer.
 * Baseline, in the same run against the same fake Bot API: a bare fetch loop on getUpdates that hands each
 * message to the same ingest, so the ratio is what the adapter adds.
 *
 *   node --import tsx scripts/bench/bench-telegram.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { createTelegramChannel } from '../../host/channels/telegram/telegram-channel.ts';
import { TELEGRAM_CHANNEL, telegramConfigSchema } from '../../host/channels/telegram/telegram-config.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { createGroupQueue } from '../../host/router/group-queue.ts';
import { createHostEvents } from '../../host/store/host-events.ts';
import { createIngest } from '../../host/router/ingest.ts';
import { createRunExecutor } from '../../host/router/run-executor.ts';
import { openStore } from '../../host/store/store.ts';
import { capStatusOver } from '../../test/helpers/cap-status.ts';
import { startFakeTelegram } from '../../test/fakes/fake-telegram-api.ts';
import { channelStateIn } from '../../test/fakes/telegram-test-host.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const SOLO_SAMPLES = 300;
const BURSTS = 20;
const BUSY = 50;

interface Handed {
  /** Resolves when the next run start or run input for this chat reaches the runner. */
  next(chatId: string): Promise<number>;
}

/** A runner that notes when each run or follow-up reaches it; runs of `hold` chats stay active. */
function timingRunner(hold: (chatId: string) => boolean) {
  const waiting = new Map<string, (at: number) => void>();
  const finishers: (() => void)[] = [];
  const handed = (chatId: string) => {
    const at = performance.now();
    waiting.get(chatId)?.(at);
    waiting.delete(chatId);
  };
  const runner: AgentRunner = {
    start(ctx) {
      handed(ctx.group.chatId);
      let finish!: () => void;
      const done = new Promise<{ ok: boolean; reason: string }>(
        (r) => (finish = () => r({ ok: true, reason: 'completed' })),
      );
      if (hold(ctx.group.chatId)) finishers.push(finish);
      else queueMicrotask(finish);
      return {
        accepted: Promise.resolve(),
        async input() {
          handed(ctx.group.chatId);
          return true;
        },
        stop: finish,
        done,
      };
    },
  };
  const tracker: Handed = {
    next: (chatId) => new Promise((resolve) => waiting.set(chatId, resolve)),
  };
  return { runner, tracker, finishAll: () => finishers.splice(0).forEach((f) => f()) };
}

export async function benchTelegram(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-tg-'));
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  const logger = pino({ level: 'silent' });
  const answeredAt = new Map<number, number>();
  const fake = await startFakeTelegram({
    onUpdatesAnswered: (ids) => {
      const at = performance.now();
      for (const id of ids) if (!answeredAt.has(id)) answeredAt.set(id, at);
    },
  });
  const busyChats = new Set<string>();
  const { runner, tracker, finishAll } = timingRunner((chatId) => busyChats.has(chatId));
  const queue = createGroupQueue({
    executor: createRunExecutor({
      store,
      runner,
      capStatus: capStatusOver(store.db),
      enqueueReply: () => undefined,
      notifyOwner: () => undefined,
      events: createHostEvents(),
      logger,
    }),
    maxConcurrent: 64,
    maxAttempts: 1,
    retryBaseMs: 5,
    logger,
  });
  const ingest = createIngest({
    store,
    assistantName: () => 'Andy',
    onTriggered: (g) => queue.notify(g),
    logger,
  });
  const addGroup = (id: string, chatId: number) =>
    store.groups.add({ id, channel: TELEGRAM_CHANNEL, chatId: String(chatId), name: id, isAdmin: false });
  const say = (chatId: number, text: string) =>
    fake.message({
      chat: { id: chatId, type: 'supergroup', title: `chat ${chatId}` },
      from: { id: 42 },
      text,
    }).updateId;

  /** One message at a time to one chat: getUpdates answer → run start. */
  async function solo(chatId: number): Promise<number[]> {
    const samples: number[] = [];
    for (let i = 0; i < SOLO_SAMPLES; i++) {
      const handed = tracker.next(String(chatId));
      const id = say(chatId, `@Andy message ${i}`);
      const at = await handed;
      samples.push(at - (answeredAt.get(id) as number));
      await queue.whenIdle();
    }
    return samples;
  }

  /** 50 chats with active runs; each burst is one follow-up per chat in one getUpdates answer. */
  async function busy(base: number): Promise<number[]> {
    const chats = Array.from({ length: BUSY }, (_, i) => base - i);
    for (const c of chats) {
      busyChats.add(String(c));
      addGroup(`g${c}`, c);
      const started = tracker.next(String(c));
      say(c, '@Andy long job');
      await started;
    }
    const samples: number[] = [];
    for (let b = 0; b < BURSTS; b++) {
      const handed = chats.map((c) => tracker.next(String(c)));
      // Queued before the poll wakes, so one answer carries the whole burst.
      const ids = chats.map((c) => say(c, `@Andy follow-up ${b}`));
      const at = await Promise.all(handed);
      at.forEach((t, i) => samples.push(t - (answeredAt.get(ids[i] as number) as number)));
    }
    return samples;
  }

  /** The baseline: a bare long-poll loop that hands each message straight to ingest. */
  function bareLoop() {
    let offset = 0;
    let running = true;
    const stopped = (async () => {
      while (running) {
        const res = await fetch(`${fake.apiRoot}/bot${fake.token}/getUpdates`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ offset, timeout: 1 }),
        });
        const body = (await res.json()) as {
          result: {
            update_id: number;
            message: {
              message_id: number;
              chat: { id: number };
              from: { id: number };
              text: string;
              date: number;
            };
          }[];
        };
        for (const u of body.result) {
          offset = u.update_id + 1;
          const m = u.message;
          ingest({
            channel: TELEGRAM_CHANNEL,
            chatId: String(m.chat.id),
            externalId: String(m.message_id),
            senderId: String(m.from.id),
            senderName: 'User',
            text: m.text,
            sentAt: new Date(m.date * 1000).toISOString(),
            mentionsBot: false,
            repliesToBot: false,
            fromOwner: false,
            origin: { kind: 'own' },
          });
        }
      }
    })();
    return async () => {
      running = false;
      fake.message({ chat: { id: 1, type: 'private' }, from: { id: 1 }, text: 'wake' });
      await stopped;
    };
  }

  try {
    addGroup('base-solo', -1001);
    const stopBare = bareLoop();
    const baseSolo = await solo(-1001);
    const baseBusy = await busy(-2000);
    await stopBare();
    finishAll();
    await queue.whenIdle();
    busyChats.clear();

    addGroup('solo', -3001);
    const channel = createTelegramChannel({
      config: telegramConfigSchema.parse({ owner_user_id: 1, api_root: fake.apiRoot, poll_timeout_s: 5 }),
      token: fake.token,
      triggerWord: '@Andy',
      state: channelStateIn(store.db, TELEGRAM_CHANNEL),
      logger,
    });
    await channel.start({
      ingest,
      ingestMedia: async (m) => ingest(m),
      onStatus: () => undefined,
      onChatSeen: () => undefined,
      isOwnMessage: () => false,
      onChatMoved: () => undefined,
    });
    // Everything the bare loop left unconfirmed is skipped, so the adapter starts on fresh updates.
    const soloSamples = await solo(-3001);
    const busySamples = await busy(-4000);
    finishAll();
    await channel.stop();

    const ratio = (a: number[], b: number[], p: number) => round(percentile(a, p) / percentile(b, p), 1);
    return {
      'baseline 1 chat: answer→runner p50 ms': round(percentile(baseSolo, 50)),
      '1 chat: answer→runner p50 ms': round(percentile(soloSamples, 50)),
      '1 chat: answer→runner p99 ms': round(percentile(soloSamples, 99)),
      '1 chat: p50 / baseline': ratio(soloSamples, baseSolo, 50),
      'baseline 50 busy: answer→run input p50 ms': round(percentile(baseBusy, 50)),
      '50 busy: answer→run input p50 ms': round(percentile(busySamples, 50)),
      '50 busy: answer→run input p99 ms': round(percentile(busySamples, 99)),
      '50 busy: p50 / baseline': ratio(busySamples, baseBusy, 50),
      '50 busy: p99 / baseline p99': ratio(busySamples, baseBusy, 99),
    };
  } finally {
    await queue.close('bench over');
    await fake.close();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url))
  printFigures('Telegram channel overhead (getUpdates answer → runner)', await benchTelegram());
