/**
 * The WhatsApp channel, on a real Baileys socket against crabline's WhatsApp server:
 * - host overhead per message: from Baileys emitting `messages.upsert` until the run is handed to the
 *   runner (adapter normalisation, LID handling, ingest, SQLite, group queue). Baseline, in the same run on
 *   the same socket: a bare `messages.upsert` listener that builds the message inline and calls the same
 *   ingest, so the ratio is what the adapter adds.
 * - reconnect time after a server restart: from the socket closing until the channel is connected again
 *   (the controller's first backoff step, 2 s ± 20 %, is most of it by design: a server that just went
 *   away is not hammered). Baseline: a fresh Baileys socket connecting to the same server.
 *
 *   node --import tsx scripts/bench/bench-whatsapp.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { WAMessage } from '@whiskeysockets/baileys';
import pino from 'pino';
import { openAuthStore } from '../../host/channels/whatsapp/auth-store.ts';
import { WHATSAPP_CHANNEL } from '../../host/channels/whatsapp/inbound-message.ts';
import { createWhatsAppChannel } from '../../host/channels/whatsapp/whatsapp-channel.ts';
import { whatsappConfigSchema } from '../../host/channels/whatsapp/whatsapp-config.ts';
import { makeBaileysSocket } from '../../host/channels/whatsapp/whatsapp-socket.ts';
import type { AgentRunner } from '../../host/router/agent-runner.ts';
import { createGroupQueue } from '../../host/router/group-queue.ts';
import { createHostEvents } from '../../host/store/host-events.ts';
import { createIngest } from '../../host/router/ingest.ts';
import { createRunExecutor } from '../../host/router/run-executor.ts';
import { openStore } from '../../host/store/store.ts';
import { capStatusOver } from '../../test/helpers/cap-status.ts';
import { seedLinkedAuth, startFakeWhatsApp, waMessage } from '../../test/fakes/whatsapp-fake.ts';
import { isMain, percentile, printFigures, round } from './stats.ts';

const SAMPLES = 300;
const RECONNECTS = 5;

function timingRunner() {
  let waiting: ((at: number) => void) | undefined;
  const runner: AgentRunner = {
    start() {
      const at = performance.now();
      waiting?.(at);
      waiting = undefined;
      return {
        accepted: Promise.resolve(),
        input: async () => true,
        stop: () => undefined,
        done: Promise.resolve({ ok: true, reason: 'completed' }),
      };
    },
  };
  return { runner, next: () => new Promise<number>((r) => (waiting = r)) };
}

const until = async (fn: () => boolean) => {
  while (!fn()) await new Promise((r) => setTimeout(r, 5));
};

export async function benchWhatsApp(): Promise<Record<string, number | string>> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-wa-'));
  const store = openStore({ file: path.join(dir, 'carapace.db') });
  const logger = pino({ level: 'silent' });
  const server = await startFakeWhatsApp(dir);
  const authDir = path.join(dir, 'whatsapp');
  await seedLinkedAuth(authDir);
  const { runner, next } = timingRunner();
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
    maxConcurrent: 8,
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
  const addGroup = (id: string, chatId: string) =>
    store.groups.add({ id, channel: WHATSAPP_CHANNEL, chatId, name: id, isAdmin: false });
  let seq = 0;
  const upsertTimes = async (emit: (m: WAMessage) => void, chatId: string) => {
    const samples: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const handed = next();
      const m = waMessage({
        id: `B${(seq += 1)}`,
        remoteJid: chatId,
        participant: i % 2 ? '15551234567@s.whatsapp.net' : `${100 + (i % 7)}@lid`,
        pushName: 'Alice',
        text: `@Andy message ${i}`,
      });
      const t0 = performance.now();
      emit(m);
      samples.push((await handed) - t0);
      await queue.whenIdle();
    }
    return samples;
  };

  const channel = createWhatsAppChannel({
    config: whatsappConfigSchema.parse({ websocket_url: server.url }),
    dataDir: authDir,
    logger,
    sendWaitMs: 5_000,
    // Each restart should meet a healthy connection (a flapping one backs off further, by design), and
    // five restarts 60 s apart would make a slow benchmark: "healthy" here is one second open.
    policy: { healthyAfterMs: 1_000 },
  });
  try {
    await channel.start({
      ingest,
      ingestMedia: async (m) => ingest(m),
      onStatus: () => undefined,
      onChatSeen: () => undefined,
      isOwnMessage: () => false,
      onChatMoved: () => undefined,
    });
    await until(() => channel.status().state === 'connected');
    const sock = channel.socket();
    if (!sock) throw new Error('no socket');
    const emit = (m: WAMessage) => sock.ev.emit('messages.upsert', { type: 'notify', messages: [m] });

    // Baseline: the same socket's upserts, taken by a bare listener that calls ingest directly. The
    // channel's own listener sees these messages too, but their group is registered under a chat id it
    // ignores for storage (ingest drops the duplicate), so each run is started once, by the baseline.
    addGroup('base', '120363000000000009@g.us');
    const bare = ({ messages }: { messages: WAMessage[] }) => {
      for (const m of messages) {
        ingest({
          channel: WHATSAPP_CHANNEL,
          chatId: m.key.remoteJid ?? '',
          externalId: m.key.id ?? '',
          senderId: m.key.participant ?? '',
          senderName: m.pushName ?? '',
          text: m.message?.conversation ?? '',
          sentAt: new Date(Number(m.messageTimestamp) * 1000).toISOString(),
          mentionsBot: false,
          repliesToBot: false,
          fromOwner: false,
          origin: { kind: 'own' },
        });
      }
    };
    sock.ev.on('messages.upsert', bare);
    const baseline = await upsertTimes(emit, '120363000000000009@g.us');
    sock.ev.off('messages.upsert', bare);
    addGroup('solo', '120363000000000001@g.us');
    const adapter = await upsertTimes(emit, '120363000000000001@g.us');

    // Reconnects: the server goes away and comes straight back.
    const reconnects: number[] = [];
    for (let i = 0; i < RECONNECTS; i++) {
      const t0 = performance.now();
      await server.restart();
      await until(() => channel.status().state !== 'connected');
      await until(() => channel.status().state === 'connected');
      reconnects.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 1_200));
    }
    await channel.stop();

    // Baseline: a fresh socket's connect, same server, same credentials.
    const fresh: number[] = [];
    for (let i = 0; i < RECONNECTS; i++) {
      const auth = openAuthStore(authDir);
      const t0 = performance.now();
      const s = makeBaileysSocket({ auth: auth.state, url: server.url, logger });
      await new Promise<void>((resolve) =>
        s.ev.on('connection.update', (u) => u.connection === 'open' && resolve()),
      );
      fresh.push(performance.now() - t0);
      void s.end(undefined);
      await auth.flush();
    }

    const p = (a: number[], q: number) => round(percentile(a, q));
    return {
      'baseline bare listener: upsert→runner p50 ms': p(baseline, 50),
      'adapter: upsert→runner p50 ms': p(adapter, 50),
      'adapter: upsert→runner p99 ms': p(adapter, 99),
      'adapter p50 / baseline p50': round(percentile(adapter, 50) / percentile(baseline, 50), 2),
      'baseline fresh connect p50 ms': p(fresh, 50),
      'reconnect after server restart p50 ms': p(reconnects, 50),
      'reconnect after server restart max ms': p(reconnects, 100),
      'reconnect p50 / fresh connect p50': round(percentile(reconnects, 50) / percentile(fresh, 50), 1),
    };
  } finally {
    await channel.stop();
    await queue.close('bench over');
    await server.close().catch(() => undefined);
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url))
  printFigures('WhatsApp channel (upsert → runner; reconnect after restart)', await benchWhatsApp());
