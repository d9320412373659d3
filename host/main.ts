import fs from 'node:fs';
import os from 'node:os';
import type http from 'node:http';
import type { Logger } from 'pino';
import type { Channel } from './channels/channel.ts';
import { createLocalChannel, LOCAL_CHANNEL } from './channels/local/local-channel.ts';
import { listenOnSocket, sendJson } from './channels/local/socket-server.ts';
import { createOutboxDispatcher } from './channels/outbox-dispatcher.ts';
import type { CarapacePaths } from './config/paths.ts';
import type { HostConfig } from './config/schema.ts';
import type { AgentRunner } from './router/agent-runner.ts';
import { createGroupQueue } from './router/group-queue.ts';
import { createHostEvents } from './router/host-events.ts';
import { createIngest } from './router/ingest.ts';
import { recoverInterruptedRuns } from './router/recover-runs.ts';
import { createRunExecutor } from './router/run-executor.ts';
import { openStore, type Store } from './store/store.ts';

export const ADMIN_GROUP_ID = 'main';

export interface HostDeps {
  paths: CarapacePaths;
  config: HostConfig;
  runner: AgentRunner;
  logger: Logger;
  /** Removes held secrets from text stored in the audit log. */
  redact: (s: string) => string;
  /** Further channels (Telegram, WhatsApp); the local console is always there. */
  extraChannels?: Channel[];
}

export interface RunningHost {
  store: Store;
  stop(reason?: string): Promise<void>;
  whenIdle(): Promise<void>;
}

export function ensureDataDirs(paths: CarapacePaths): void {
  for (const dir of [paths.dataDir, paths.groupsDir, paths.sessionsDir, paths.logsDir]) {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  // The socket's only authentication is that nobody else can reach into this folder.
  fs.chmodSync(paths.dataDir, 0o700);
}

export function ensureAdminGroup(store: Store): void {
  if (!store.groups.get(ADMIN_GROUP_ID)) {
    store.groups.add({
      id: ADMIN_GROUP_ID,
      channel: LOCAL_CHANNEL,
      chatId: ADMIN_GROUP_ID,
      name: 'Admin console',
      isAdmin: true,
    });
  }
}

/** Wiring only: every subsystem gets its dependencies here and nowhere else. */
export async function startHost({
  paths,
  config,
  runner,
  logger,
  redact,
  extraChannels = [],
}: HostDeps): Promise<RunningHost> {
  ensureDataDirs(paths);
  const store = openStore({ file: paths.databaseFile, redact });
  let server: http.Server | undefined;
  try {
    ensureAdminGroup(store);
    const events = createHostEvents();
    const channels = new Map<string, Channel>();
    const dispatcher = createOutboxDispatcher({
      outbox: store.outbox,
      channelFor: (name) => channels.get(name),
      retryBaseMs: config.outbox.retry_base_ms,
      retryMaxMs: config.outbox.retry_max_ms,
      onDelivered: (item) => events.emit('outbox-delivered', item),
      logger: logger.child({ subsystem: 'outbox' }),
    });
    const executor = createRunExecutor({
      store,
      runner,
      enqueueReply: dispatcher.enqueue,
      events,
      logger: logger.child({ subsystem: 'runs' }),
    });
    const queue = createGroupQueue({
      executor,
      maxConcurrent: config.runs.max_concurrent,
      maxAttempts: config.runs.max_attempts,
      retryBaseMs: config.runs.retry_base_ms,
      logger: logger.child({ subsystem: 'queue' }),
    });
    const ingest = createIngest({
      store,
      assistantName: config.assistant.name,
      onTriggered: (groupId) => queue.notify(groupId),
      logger: logger.child({ subsystem: 'ingest' }),
    });
    const local = createLocalChannel({
      groups: store.groups,
      outbox: store.outbox,
      events,
      isBusy: (id) => queue.isBusy(id),
      ownerName: os.userInfo().username,
      logger: logger.child({ channel: LOCAL_CHANNEL }),
    });
    const startedAt = new Date().toISOString();
    server = await listenOnSocket(paths.socketFile, {
      ...local.routes,
      'GET /v1/status': (_req, res) =>
        sendJson(res, 200, {
          pid: process.pid,
          startedAt,
          assistant: config.assistant.name,
          queue: queue.snapshot(),
          outboxPending: store.outbox.pendingCount(),
          groups: store.groups
            .list()
            .map((g) => ({ id: g.id, channel: g.channel, admin: g.isAdmin, cursor: g.agentCursor })),
        }),
    });

    for (const ch of [local.channel, ...extraChannels]) {
      channels.set(ch.name, ch);
      await ch.connect(ingest);
    }
    // Only now, holding the socket (one host per data folder), is it safe to take over unfinished work.
    for (const groupId of recoverInterruptedRuns(store, logger)) queue.notify(groupId);
    dispatcher.kick();
    logger.info({ socket: paths.socketFile, groups: store.groups.list().length }, 'host started');

    const openServer = server;
    return {
      store,
      whenIdle: () => queue.whenIdle(),
      async stop(reason = 'host stopping') {
        await queue.close(reason);
        await dispatcher.stop();
        for (const ch of channels.values()) await ch.disconnect().catch(() => undefined);
        openServer.closeAllConnections();
        await new Promise<void>((resolve) => openServer.close(() => resolve()));
        store.close();
        logger.info({ reason }, 'host stopped');
      },
    };
  } catch (err) {
    server?.close();
    store.close();
    throw err;
  }
}
