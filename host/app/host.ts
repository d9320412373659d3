import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import type { Logger } from '../logging/logger.ts';
import { adminCommandReplyKey, createAdminCommandHandler } from '../admin/admin-command-handler.ts';
import { createApprovalService, type ApprovalService } from '../admin/approval-service.ts';
import { createApprovalButtons } from '../admin/approval-buttons.ts';
import { approvalActions, approvalNoticeKey } from '../admin/approval-message.ts';
import { createScheduler, type Scheduler } from '../scheduler/scheduler.ts';
import { createTaskDelivery } from '../scheduler/task-delivery.ts';
import { createOwnerTaskCancel } from '../scheduler/tainted-task-notice.ts';
import { ensureAdminGroup } from '../admin/admin-group.ts';
import { isOwnerMessage } from '../admin/owner-check.ts';
import { createAdminChats } from '../admin/admin-chats.ts';
import { createChannelNotices } from '../admin/channel-notices.ts';
import { createSpendView } from '../admin/spend-view.ts';
import { createDailySummary } from '../admin/daily-summary.ts';
import { createPriceNotes } from '../admin/price-notes.ts';
import type { Channel, ChannelHost, ChannelStatus } from '../channels/channel.ts';
import { ALWAYS_ON_CHANNELS, CHANNEL_DEFINITIONS } from '../channels/channel-definitions.ts';
import { createChannelRegistry, type ChannelRegistry } from '../channels/registry.ts';
import { createDeliveryOutcomes } from '../channels/delivery-outcomes.ts';
import type { PrestartStatus } from '../channels/local/local-api.ts';
import { createLocalChannel, LOCAL_CHANNEL } from '../channels/local/local-channel.ts';
import { listenOnSocket } from '../channels/local/socket-server.ts';
import { createOutboxDispatcher } from '../channels/outbox-dispatcher.ts';
import { channelDataDir, ensureDataDirs, type CarapacePaths } from '../config/paths.ts';
import { describeReload, type ReloadConfig } from '../config/config-reload.ts';
import { formatProblem } from '../config/config-error.ts';
import { createConfigFileStore } from '../config/config-file-store.ts';
import { createConfigHealth } from '../config/config-health.ts';
import { createConfigReloader, type ConfigReloader } from '../config/config-reloader.ts';
import { createConfigSource, type ConfigSource } from '../config/config-source.ts';
import { watchConfigFile } from '../config/config-watch.ts';
import { createReloadCheck } from '../config/reload-check.ts';
import { saveLastGood, type StartConfig } from '../config/safe-start.ts';
import { adminGroupId } from '../admin/admin-group.ts';
import type { HostConfig } from '../config/schema.ts';
import type { AgentRunner } from '../router/agent-runner.ts';
import { createGroupQueue, type GroupQueue } from '../router/group-queue.ts';
import { createHostEvents } from '../router/host-events.ts';
import { createIngest } from '../router/ingest.ts';
import { createMediaIngest, type Transcribe } from '../router/media/media-ingest.ts';
import { folderUsage } from '../containers/mounts/disk-quota.ts';
import { recoverInterruptedRuns } from '../router/recover-runs.ts';
import { createRunExecutor, type RunExecutor } from '../router/run-executor.ts';
import { createTypingIndicator } from '../router/typing-indicator.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import { acquireHostLock } from '../store/host-lock.ts';
import { createRetentionRunner } from '../store/retention-runner.ts';
import { openStore, type Store } from '../store/store.ts';
import { createCloserStack } from './closer-stack.ts';
import { createControlRoutes, readHostStatus, type ControlApiDeps } from './control-api.ts';
import { lateBound } from './late-bound.ts';
import type { McpServerStatus } from '../services/mcp/mcp-connection.ts';
import type { CredentialStatus } from '../gateway/credential/credential-status.ts';
import { HostStartError } from './start-error.ts';
import { createSpendReporter } from '../gateway/spend/spend-report.ts';
import { createCapStatus } from '../gateway/spend/cap-status.ts';
import { createSqliteUsageStore } from '../gateway/spend/usage-store-sqlite.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { startWalCheckpoints } from '../store/wal-checkpoints.ts';
import { registerGroup } from '../admin/register-group.ts';
import { createWebAuth } from '../web/web-auth.ts';
import { startWebConsole, type WebConsole } from '../web/web-server.ts';

export interface RunnerRuntime {
  runner: AgentRunner;
  close(): Promise<void>;
  /** Voice → text through the runtime's gateway (spend cap, usage); absent: voice notes are not transcribed. */
  transcribe?: Transcribe;
  /** The MCP servers declared in `[services]`, for `status`. */
  services?: { status(): McpServerStatus[] };
  /** The credentials declared in `[credentials]` and their last answers, for `status`. */
  credentials?: { status(): CredentialStatus[] };
  /** Pre-started containers, when the runtime keeps them. */
  prestart?: {
    status(): PrestartStatus;
    /** Groups or their settings changed: containers that may no longer serve a run are stopped now. */
    refresh(): void;
  };
}

/** What a runner factory may use; it runs after the host holds its data folder, before any run starts. */
export interface RunnerFactoryDeps {
  store: Store;
  logger: Logger;
  /** Human approval in the admin chat, for decisions the policy leaves to the owner. */
  approvals: ApprovalService;
  /** Scheduled tasks; the runner's task.* handlers change them. */
  scheduler: Scheduler;
  /** Stores a host notice for a chat and wakes its delivery. */
  enqueueNotice(item: NewOutboxItem): void;
  /** A notice for the owner in every admin chat (or those `[admin] notify` names). */
  notifyOwner(key: string, text: string): void;
  /** The channel registry: formatting rules for the agent, what register_group accepts. */
  channels: ChannelRegistry;
  /** Applies config.toml to the running host after an approved change (default: at the next restart). */
  reloadConfig?: ReloadConfig;
  /** The configuration running now; read values that apply without a restart from here, at use. */
  config: ConfigSource;
}

/** A host that runs on config.toml and applies its changes while it runs (`carapace start`). */
export interface ConfigFileReload {
  /** What the start read (the file, or the last good copy in safe mode). */
  start: StartConfig;
  exampleFile: string;
  /** Quiet time after an edit of the file before it is read (default 300 ms). */
  watchDebounceMs?: number;
}

export interface HostDeps {
  paths: CarapacePaths;
  /** The configuration at start; with `reload`, the one `reload.start` holds. */
  config: HostConfig;
  /** Absent: the config stays as started (tests, doubles). */
  reload?: ConfigFileReload;
  createRunner(deps: RunnerFactoryDeps): Promise<RunnerRuntime>;
  logger: Logger;
  /** Removes held secrets from text stored in the audit log. */
  redact: (s: string) => string;
  /** Channels besides the console and the configured ones (tests' doubles). */
  extraChannels?: Channel[];
  /** Secret lookup by variable name, for the channels' tokens. */
  secret?(name: string): string | undefined;
  /**
   * The host's clock (tests pass a fake one): approvals, the scheduler, the outbox, the run queue, retention
   * and the daily summary's time (default: the system clock).
   */
  clock?: Clock;
  /** `carapace doctor`'s checks (the CLI injects them; nothing here imports it), for the web console. */
  doctor?(): Promise<{ name: string; ok: boolean; detail: string; fix?: string }[]>;
}

export interface RunningHost {
  store: Store;
  stop(reason?: string): Promise<void>;
  whenIdle(): Promise<void>;
}

/**
 * Wiring only: every subsystem gets its dependencies here and nowhere else. Each part that comes up pushes
 * its closer onto one stack; a failed start unwinds exactly what came up (connected channels included) and
 * throws a HostStartError naming the step, and `stop()` unwinds the same stack.
 */
export async function startHost({
  paths,
  config,
  createRunner,
  logger,
  redact,
  extraChannels = [],
  secret = () => undefined,
  reload,
  clock = systemClock,
  doctor,
}: HostDeps): Promise<RunningHost> {
  const source = createConfigSource(reload?.start.applied ?? { config, text: '', hash: '' }, (err) =>
    logger.error({ err }, 'a subsystem failed to take a changed config'),
  );
  const live = source.current;
  const closers = createCloserStack();
  let step = 'creating the data folder';
  try {
    ensureDataDirs(paths);
    step = "taking the data folder's lock";
    // Before anything touches the database, unfinished runs or containers: one host per data folder.
    const lock = acquireHostLock(paths.dataDir);
    closers.push('host lock', () => lock.release());
    step = 'opening the database';
    const store = openStore({ file: paths.databaseFile, redact, scheduledCheckpoints: true });
    closers.push('database', () => store.close());
    const checkpoints = startWalCheckpoints({
      db: store.db,
      clock,
      logger: logger.child({ subsystem: 'store' }),
    });
    closers.push('WAL checkpoints', () => checkpoints.stop());
    ensureAdminGroup(store);
    const events = createHostEvents();
    const channels = new Map<string, Channel>();
    const registry = createChannelRegistry({
      definitions: CHANNEL_DEFINITIONS,
      config: () => config.channels,
      alwaysOn: ALWAYS_ON_CHANNELS,
      dataDirOf: (name) => channelDataDir(paths, name),
    });
    const statuses = new Map<string, ChannelStatus>();
    // Set once every channel started: a channel's own shutdown on stop is not news to announce.
    let running = false;
    // Bound late: the console's routes exist before the queue, the runtime and the reloader do (the socket
    // is taken first).
    const lateQueue = lateBound<GroupQueue>();
    const lateExecutor = lateBound<RunExecutor>();
    const lateRuntime = lateBound<RunnerRuntime>();
    const lateReloader = lateBound<ConfigReloader>();
    const lateWeb = lateBound<WebConsole>();
    const local = createLocalChannel({
      groups: store.groups,
      outbox: store.outbox,
      events,
      isBusy: (id) => lateQueue.get()?.isBusy(id) ?? false,
      capRefusal: (id) => lateExecutor.get()?.capRefusal(id),
      ownerName: os.userInfo().username,
      logger: logger.child({ channel: LOCAL_CHANNEL }),
    });
    const startedAt = new Date().toISOString();
    const controlDeps: ControlApiDeps = {
      store,
      databaseFile: paths.databaseFile,
      startedAt,
      assistantName: () => live().assistant.name,
      queue: lateQueue.get,
      runtime: lateRuntime.get,
      reloader: lateReloader.get,
      web: lateWeb.get,
      channels: () =>
        [...channels.values()].map((ch) => ({
          name: ch.name,
          status: statuses.get(ch.name) ?? ch.status(),
          adminChat: ch.adminChatId(),
        })),
    };
    step = 'opening the control socket';
    const server = await listenOnSocket(paths.socketFile, {
      ...local.routes,
      ...createControlRoutes(controlDeps),
    });
    closers.push('control socket', async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    // The channels start last but stop only after the runs ended and the outbox stopped, so a run's last
    // reply still goes out: their closers live on a stack of their own, registered here.
    const channelClosers = createCloserStack();
    closers.push('channels', async (reason) => {
      const failures = await channelClosers.closeAll(reason);
      for (const f of failures)
        logger.warn({ err: f.error, channel: f.name }, 'channel did not stop cleanly');
    });
    const adminChats = createAdminChats({
      groups: store.groups,
      channels: () => channels.values(),
      notifyChannels: () => live().admin.notify,
      enqueue: (item) => dispatcher.enqueue(item),
    });
    const outcomes = createDeliveryOutcomes({
      store,
      notifyOwner: (key, text) => adminChats.notify(key, text),
      logger: logger.child({ subsystem: 'outbox' }),
    });
    const dispatcher = createOutboxDispatcher({
      outbox: store.outbox,
      channelFor: (name) => channels.get(name),
      retryBaseMs: config.outbox.retry_base_ms,
      retryMaxMs: config.outbox.retry_max_ms,
      maxConnectionDrops: config.outbox.max_connection_drops,
      clock,
      onDelivered: (item) => {
        approvalButtons.onDelivered(item);
        events.emit('outbox-delivered', item);
      },
      onDeadLetter: outcomes.onDeadLetter,
      onChatMoved: outcomes.onChatMoved,
      logger: logger.child({ subsystem: 'outbox' }),
    });
    // A settled request's buttons come off in every chat they were shown in, however it was settled.
    const approvalButtons = createApprovalButtons({
      outbox: store.outbox,
      channelFor: (name) => channels.get(name),
      isOpen: (id) => store.approvals.get(id)?.status === 'pending',
      clock,
      logger: logger.child({ subsystem: 'approvals' }),
    });
    // Neither holds a timer until the runner or the first run uses it; their closers go on the stack below,
    // after the queue's, so that a stop ends pending approvals and due tasks before it waits for runs.
    const approvals = createApprovalService({
      store,
      redact,
      timeoutMs: config.security.approval_timeout_ms,
      clock,
      logger: logger.child({ subsystem: 'approvals' }),
      notifyAdmin: async (text, { approvalId }) =>
        adminChats.notify(approvalNoticeKey(approvalId), text, { actions: approvalActions(approvalId) }),
      notifyExpired: (text, { approvalId }) => adminChats.notify(`approval-expired:${approvalId}`, text),
      onChange: (approvalId) => {
        events.emit('approval-changed', approvalId);
        approvalButtons.onChange(approvalId);
      },
    });
    // Requests of runs that died with the previous host can never be executed: close them first.
    approvals.expireOrphans();
    const scheduler = createScheduler({
      tasks: store.tasks,
      transaction: store.transaction,
      ...createTaskDelivery({
        groups: store.groups,
        messages: store.messages,
        notify: (id) => lateQueue.get()?.notify(id),
      }),
      timezone: () => live().assistant.timezone,
      audit: store.audit,
      logger: logger.child({ subsystem: 'scheduler' }),
      retryMs: config.scheduler.delivery_retry_ms,
      clock,
    });
    step = 'starting the agent runtime';
    const runtime = await createRunner({
      store,
      logger,
      approvals,
      scheduler,
      enqueueNotice: dispatcher.enqueue,
      notifyOwner: (key, text) => adminChats.notify(key, text),
      channels: registry,
      config: source,
      ...(reload
        ? {
            reloadConfig: async () => {
              const reloader = lateReloader.get();
              return reloader
                ? describeReload(await reloader.reload('proposal'))
                : { ok: false, detail: 'the host is still starting; the file is read again once it runs' };
            },
          }
        : {}),
    });
    lateRuntime.set(runtime);
    closers.push('agent runtime', () =>
      runtime.close().catch((err: unknown) => logger.error({ err }, 'runner shutdown failed')),
    );
    closers.push('outbox delivery', () => dispatcher.stop());

    const usage = createSqliteUsageStore(store.db);
    const executor = createRunExecutor({
      store,
      runner: runtime.runner,
      // The gateway's records and rule, read as the run would start: the caps and the zone running now.
      capStatus: createCapStatus({
        config: () => live().gateway,
        spentTodayMicros: (groupId, day) => usage.spentTodayMicros(groupId, day),
        timezone: () => live().assistant.timezone,
        now: clock.now,
      }),
      enqueueReply: dispatcher.enqueue,
      notifyOwner: (key, text) => adminChats.notify(key, text),
      events,
      logger: logger.child({ subsystem: 'runs' }),
    });
    lateExecutor.set(executor);
    const activeQueue = createGroupQueue({
      executor,
      maxConcurrent: config.runs.max_concurrent,
      maxAttempts: config.runs.max_attempts,
      retryBaseMs: config.runs.retry_base_ms,
      clock,
      logger: logger.child({ subsystem: 'queue' }),
    });
    lateQueue.set(activeQueue);
    closers.push('run queue', (reason) => activeQueue.close(reason));
    closers.push('approvals', async () => {
      approvals.close();
      // Requests the stop expired lose their buttons while the channels still run.
      await approvalButtons.settled();
    });
    closers.push('scheduler', () => scheduler.stop());
    const spend = createSpendView({
      reporter: createSpendReporter(store.db),
      groupIds: () => store.groups.list().map((g) => g.id),
      gateway: () => live().gateway,
      timezone: () => live().assistant.timezone,
      now: clock.now,
    });
    const webListen = config.web.listen;
    if (webListen !== undefined) {
      step = `starting the web console on ${webListen}`;
      const web = await startWebConsole(
        { ...config.web, listen: webListen },
        {
          auth: createWebAuth({
            sessions: store.webSessions,
            audit: store.audit,
            clock,
            linkTtlMs: config.web.login_link_ttl_ms,
            sessionTtlMs: config.web.session_ttl_ms,
          }),
          approvals,
          store,
          events,
          queue: () => activeQueue.snapshot(),
          status: () => readHostStatus(controlDeps),
          config: live,
          spend: () => spend.report(),
          ...(doctor ? { doctor } : {}),
          registerGroup: (r) => {
            const g = registerGroup({ store, registry }, r);
            // As `groups/changed` after the CLI's: a pre-started container may no longer serve.
            lateRuntime.get()?.prestart?.refresh();
            return g;
          },
          ...(reload
            ? {
                configFile: {
                  store: createConfigFileStore({ configFile: paths.configFile }),
                  reload: async () => {
                    const reloader = lateReloader.get();
                    return reloader
                      ? describeReload(await reloader.reload('web'))
                      : { ok: false, detail: 'the host is still starting; it reads the file once it runs' };
                  },
                },
              }
            : {}),
          notifyOwner: (key, text) => adminChats.notify(key, text),
          adminChat: local.adminConversation,
          clock,
          logger: logger.child({ subsystem: 'web' }),
        },
      );
      lateWeb.set(web);
      closers.push('web console', () => web.close());
      logger.info({ url: web.baseUrl }, 'web console listening');
    }
    const typing = createTypingIndicator({
      groups: store.groups,
      isBusy: (id) => activeQueue.isBusy(id),
      channelFor: (name) => channels.get(name),
    });
    events.on('group-state', typing.sync);
    closers.push('typing indicator', () => typing.stop());
    const ingest = createIngest({
      store,
      adminCommands: createAdminCommandHandler({
        approvals,
        usage: (groupId) => spend.text(groupId === undefined ? {} : { groupId }),
        cancelTask: createOwnerTaskCancel({ tasks: store.tasks, scheduler, audit: store.audit }),
        isOwnerMessage: isOwnerMessage,
        // The answer goes back to the admin chat the command came from, whichever channel that is.
        reply: (text, group, m) =>
          dispatcher.enqueue({
            idempotencyKey: adminCommandReplyKey(m),
            groupId: group.id,
            channel: m.channel,
            chatId: m.chatId,
            runId: null,
            text,
          }),
        onDecided: (text, m) =>
          adminChats.notify(`decided:${adminCommandReplyKey(m)}`, `Decided in ${m.channel}: ${text}`, {
            except: { channel: m.channel, chatId: m.chatId },
          }),
        webLogin: (issuedTo) => lateWeb.get()?.loginLink(issuedTo),
        audit: store.audit,
        redact,
        logger: logger.child({ subsystem: 'admin' }),
      }),
      assistantName: () => live().assistant.name,
      triggerSettings: (groupId) => {
        const g = live().groups[groupId];
        return { trigger: g?.trigger ?? 'mention', allowedSenders: g?.allowed_senders };
      },
      onTriggered: (groupId) => {
        activeQueue.notify(groupId);
        typing.sync(groupId);
      },
      logger: logger.child({ subsystem: 'ingest' }),
    });

    const groupDir = (groupId: string) => path.join(paths.groupsDir, groupId);
    const ingestMedia = createMediaIngest({
      config: () => live().media,
      groupTranscribes: (groupId) => live().groups[groupId]?.transcribe ?? true,
      store,
      groupDir,
      quotaProblem: async (groupId, addBytes) => {
        const limit = live().containers.group_quota_mb * 1024 * 1024;
        const { bytes } = await folderUsage(groupDir(groupId));
        return bytes + addBytes > limit
          ? `the group folder is full (its quota is ${live().containers.group_quota_mb} MB, [containers] group_quota_mb)`
          : null;
      },
      transcribe: () => runtime.transcribe,
      ingest,
      logger: logger.child({ subsystem: 'media' }),
    });

    const channelNotices = createChannelNotices({ notify: adminChats.notify, running: () => running });
    step = 'setting up the configured channels';
    const configured = registry.create((d) => {
      const dataDir = channelDataDir(paths, d.name);
      fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      return {
        secret,
        state: store.channelState(d.name),
        dataDir,
        logger: logger.child({ channel: d.name }),
        assistantName: config.assistant.name,
        clock,
      };
    });
    for (const ch of [local.channel, ...configured, ...extraChannels]) channels.set(ch.name, ch);
    for (const ch of channels.values()) {
      const log = logger.child({ channel: ch.name });
      const host: ChannelHost = {
        ingest,
        ingestMedia,
        onStatus: (status) => {
          const before = statuses.get(ch.name)?.state;
          statuses.set(ch.name, status);
          log.info({ status }, 'channel status');
          channelNotices.statusChanged(ch, before, status);
        },
        onChatSeen: (chat) => {
          // Remembered for registering: an admin chat is no candidate (it already is the admin conversation).
          if (chat.chatId !== ch.adminChatId() && !store.groups.findByChat(ch.name, chat.chatId))
            store.chatsSeen.seen(ch.name, chat.chatId, chat.title);
        },
        isOwnMessage: (chatId, platformId) => store.outbox.isOwnMessage(ch.name, chatId, platformId),
        onChatMoved: (from, to, reason) => outcomes.rebind(ch.name, from, to, reason),
      };
      step = `starting the ${ch.name} channel`;
      // Registered before it starts: a channel that fails half-way may already hold a connection or timer.
      channelClosers.push(ch.name, () => ch.stop());
      await ch.start(host);
    }
    running = true;
    step = 'taking over unfinished work';
    // Only now, holding the socket (one host per data folder), is it safe to take over unfinished work.
    for (const groupId of recoverInterruptedRuns(store, logger, {
      enqueue: dispatcher.enqueue,
      notifyOwner: (key, text) => adminChats.notify(key, text),
    }))
      activeQueue.notify(groupId);
    // Tasks that fell due while the host was down fire once now, then on their own timer.
    scheduler.start();
    const retention = createRetentionRunner({
      retention: store.retention,
      audit: store.audit,
      policy: {
        outboxDays: config.retention.outbox_days,
        messagesDays: config.retention.messages_days,
        runsDays: config.retention.runs_days,
        usageDays: config.retention.usage_days,
      },
      batchSize: config.retention.batch_size,
      intervalMs: config.retention.interval_ms,
      clock,
      logger: logger.child({ subsystem: 'retention' }),
    });
    retention.start();
    closers.push('retention', () => retention.stop());
    const priceNotes = createPriceNotes({ spend, config: live, now: clock.now });
    const dailySummary = createDailySummary({
      clock,
      settings: () => ({ at: live().admin.daily_summary, timezone: live().assistant.timezone }),
      summary: () => [spend.text({ days: 1 }), ...priceNotes()].join('\n'),
      notify: (key, text) => adminChats.notify(key, text),
      onError: (err) => logger.error({ err }, 'the daily summary failed'),
    });
    dailySummary.start();
    // A new time or time zone moves the next summary.
    const unsubscribeSummary = source.subscribe(() => dailySummary.rearm());
    closers.push('daily summary', () => {
      unsubscribeSummary();
      dailySummary.stop();
    });
    dispatcher.kick();
    if (reload) {
      step = 'watching the config file';
      const files = createConfigFileStore({ configFile: paths.configFile });
      const reloader = createConfigReloader({
        store: files,
        source,
        check: createReloadCheck({
          configFile: paths.configFile,
          exampleFile: reload.exampleFile,
          adminGroupId: () => adminGroupId(store.groups),
        }),
        health: createConfigHealth({
          channels: () =>
            [...channels.values()].map((ch) => ({
              name: ch.name,
              state: (statuses.get(ch.name) ?? ch.status()).state,
            })),
          adminChats: () => adminChats.linked(),
          notifyChannels: () => live().admin.notify,
        }),
        announce: (key, text) => adminChats.notify(key, text),
        saveLastGood: (applied) => saveLastGood(paths.configFile, applied),
        // A pre-started container made under the old config (its TZ, its mounts) is replaced now, not
        // discarded when its group's next run finds it stale.
        onApplied: () => lateRuntime.get()?.prestart?.refresh(),
        logger: logger.child({ subsystem: 'config' }),
      });
      lateReloader.set(reloader);
      const stopWatch = watchConfigFile({
        configFile: paths.configFile,
        ...(reload.watchDebounceMs === undefined ? {} : { debounceMs: reload.watchDebounceMs }),
        onChange: () => void reloader.reload('file'),
        onError: (err) =>
          logger.error({ err }, 'config file watch failed; changes need carapace config set or a restart'),
      });
      closers.push('config watch', () => stopWatch());
      const safe = reload.start.safeMode;
      if (safe) {
        const problems = safe.problems.map(formatProblem);
        logger.error({ problems, runningOn: safe.lastGoodFile }, 'config file invalid; running in safe mode');
        adminChats.notify(
          `config:safe-mode:${reload.start.applied.hash.slice(0, 12)}:${Date.now()}`,
          `SAFE MODE: ${paths.configFile} is not valid, so the host started on the last good configuration ` +
            `(${safe.lastGoodFile}, saved ${safe.savedAt}). ${problems.length} problem(s):\n` +
            problems.map((p) => `- ${p}`).join('\n') +
            '\nRepair the file (by hand, carapace config set or rollback): the running host picks it up.',
        );
      } else saveLastGood(paths.configFile, reload.start.applied);
    }
    logger.info({ socket: paths.socketFile, groups: store.groups.list().length }, 'host started');

    return {
      store,
      whenIdle: () => activeQueue.whenIdle(),
      async stop(reason = 'host stopping') {
        running = false;
        const failures = await closers.closeAll(reason);
        for (const f of failures) logger.error({ err: f.error, part: f.name }, 'could not close cleanly');
        logger.info({ reason }, 'host stopped');
      },
    };
  } catch (err) {
    const open = closers.names();
    const failures = await closers.closeAll(`start failed: ${step}`);
    const error = new HostStartError(step, err, failures);
    logger.error({ err, step, closed: open, closeFailures: failures.length }, error.message);
    throw error;
  }
}
