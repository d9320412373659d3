import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../logging/logger.ts';
import type { ApprovalService } from '../admin/approval-service.ts';
import { ensureAdminGroup } from '../admin/admin-group.ts';
import { createChannelNotices } from '../admin/channel-notices.ts';
import { createSpendView } from '../admin/spend-view.ts';
import { startDailySummary } from '../admin/start-daily-summary.ts';
import { wireAdminCommands } from '../admin/wire-admin-commands.ts';
import { wireApprovals } from '../admin/wire-approvals.ts';
import { wireDelivery } from '../admin/wire-delivery.ts';
import type { Channel, ChannelStatus } from '../channels/channel.ts';
import { ALWAYS_ON_CHANNELS, CHANNEL_DEFINITIONS } from '../channels/channel-definitions.ts';
import { createChannelRegistry, type ChannelRegistry } from '../channels/registry.ts';
import type { PrestartStatus } from '../channels/local/local-api.ts';
import { createLocalChannel, LOCAL_CHANNEL } from '../channels/local/local-channel.ts';
import { createConfiguredChannels, startChannels } from '../channels/start-channels.ts';
import { channelDataDir, ensureDataDirs, type CarapacePaths } from '../config/paths.ts';
import { reloadWhenRunning, type ReloadConfig } from '../config/config-reload.ts';
import type { ConfigReloader } from '../config/config-reloader.ts';
import { createConfigSource, type ConfigSource } from '../config/config-source.ts';
import { wireConfigReload, type ConfigFileReload } from '../config/wire-config-reload.ts';
import type { HostConfig } from '../config/schema.ts';
import { groupRoomCheck } from '../containers/mounts/disk-quota.ts';
import type { AgentRunner } from '../router/agent-runner.ts';
import type { GroupQueue } from '../router/group-queue.ts';
import type { Transcribe } from '../router/media/media-ingest.ts';
import { recoverInterruptedRuns } from '../router/recover-runs.ts';
import type { RunExecutor } from '../router/run-executor.ts';
import { wireIngest } from '../router/wire-ingest.ts';
import { wireRuns } from '../router/wire-runs.ts';
import type { Scheduler } from '../scheduler/scheduler.ts';
import { createOwnerTaskCancel } from '../scheduler/tainted-task-notice.ts';
import { wireScheduler } from '../scheduler/wire-scheduler.ts';
import type { McpServerStatus } from '../services/mcp/mcp-connection.ts';
import type { CredentialStatus } from '../gateway/credential/credential-status.ts';
import { createSpendReporter } from '../gateway/spend/spend-report.ts';
import { createHostEvents } from '../store/host-events.ts';
import { acquireHostLock } from '../store/host-lock.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import { startRetention } from '../store/start-retention.ts';
import { createMemoryNotes } from '../memory/memory-notes.ts';
import { startMemoryBackfill } from '../memory/memory-backfill.ts';
import { openStore, type Store } from '../store/store.ts';
import { startWalCheckpoints } from '../store/wal-checkpoints.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import type { WebConsole } from '../web/web-server.ts';
import { createCloserStack } from './closer-stack.ts';
import { createControlRoutes, openControlSocket, type ControlApiDeps } from './control-api.ts';
import { lateBound } from './late-bound.ts';
import { describeRunner } from '../containers/kubernetes/runner-choice.ts';
import { HostStartError } from './start-error.ts';
import { wireWebConsole } from './wire-web-console.ts';

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
 * Wiring only: every subsystem gets its dependencies here and nowhere else, one named step each, built by a
 * function in the subsystem it wires. Each part that comes up pushes its closer onto one stack; a failed
 * start unwinds exactly what came up (connected channels included) and throws a HostStartError naming the
 * step, and `stop()` unwinds the same stack.
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
    const statuses = new Map<string, ChannelStatus>();
    const registry = createChannelRegistry({
      definitions: CHANNEL_DEFINITIONS,
      config: () => config.channels,
      alwaysOn: ALWAYS_ON_CHANNELS,
      dataDirOf: (name) => channelDataDir(paths, name),
    });
    // Set once every channel started: a channel's own shutdown on stop is not news to announce.
    let running = false;
    // Bound late: the console's routes exist before the queue, the runtime and the reloader do (the socket
    // is taken first).
    const lateQueue = lateBound<GroupQueue>();
    const lateExecutor = lateBound<RunExecutor>();
    const lateRuntime = lateBound<RunnerRuntime>();
    const lateReloader = lateBound<ConfigReloader>();
    const lateWeb = lateBound<WebConsole>();
    const prestartRefresh = () => lateRuntime.get()?.prestart?.refresh();

    const local = createLocalChannel({
      groups: store.groups,
      outbox: store.outbox,
      events,
      isBusy: (id) => lateQueue.get()?.isBusy(id) ?? false,
      capRefusal: (id) => lateExecutor.get()?.capRefusal(id),
      ownerName: os.userInfo().username,
      logger: logger.child({ channel: LOCAL_CHANNEL }),
    });
    const control: ControlApiDeps = {
      store,
      databaseFile: paths.databaseFile,
      startedAt: new Date().toISOString(),
      assistantName: () => live().assistant.name,
      runner: () => describeRunner(config.runner),
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
    closers.push(
      'control socket',
      await openControlSocket(paths.socketFile, { ...local.routes, ...createControlRoutes(control) }),
    );
    // The channels start last but stop only after the runs ended and the outbox stopped, so a run's last
    // reply still goes out: their closers live on a stack of their own, registered here.
    const channelClosers = createCloserStack();
    closers.push('channels', async (reason) => {
      for (const f of await channelClosers.closeAll(reason))
        logger.warn({ err: f.error, channel: f.name }, 'channel did not stop cleanly');
    });

    const delivery = wireDelivery({
      store,
      channelFor: (name) => channels.get(name),
      channels: () => channels.values(),
      notifyChannels: () => live().admin.notify,
      retry: {
        retryBaseMs: config.outbox.retry_base_ms,
        retryMaxMs: config.outbox.retry_max_ms,
        maxConnectionDrops: config.outbox.max_connection_drops,
      },
      events,
      clock,
      logger,
    });
    const { adminChats, dispatcher } = delivery;
    const notifyOwner = (key: string, text: string) => adminChats.notify(key, text);
    // Neither holds a timer until the runner or the first run uses it; their closers go on the stack below,
    // after the queue's, so that a stop ends pending approvals and due tasks before it waits for runs.
    const approvals = wireApprovals({
      store,
      redact,
      timeoutMs: config.security.approval_timeout_ms,
      delivery,
      events,
      clock,
      logger,
    });
    const scheduler = wireScheduler({
      store,
      notify: (id) => lateQueue.get()?.notify(id),
      timezone: () => live().assistant.timezone,
      retryMs: config.scheduler.delivery_retry_ms,
      clock,
      logger,
    });

    step = 'starting the agent runtime';
    const runtime = await createRunner({
      store,
      logger,
      approvals,
      scheduler,
      enqueueNotice: dispatcher.enqueue,
      notifyOwner,
      channels: registry,
      config: source,
      ...(reload ? { reloadConfig: reloadWhenRunning(lateReloader.get, 'proposal') } : {}),
    });
    lateRuntime.set(runtime);
    closers.push('agent runtime', () =>
      runtime.close().catch((err: unknown) => logger.error({ err }, 'runner shutdown failed')),
    );
    closers.push('outbox delivery', () => dispatcher.stop());

    const { executor, queue } = wireRuns({
      store,
      runner: runtime.runner,
      live,
      limits: {
        maxConcurrent: config.runs.max_concurrent,
        maxAttempts: config.runs.max_attempts,
        retryBaseMs: config.runs.retry_base_ms,
      },
      enqueueReply: dispatcher.enqueue,
      notifyOwner,
      events,
      clock,
      logger,
    });
    lateExecutor.set(executor);
    lateQueue.set(queue);
    closers.push('run queue', (reason) => queue.close(reason));
    closers.push('approvals', async () => {
      approvals.close();
      // Requests the stop expired lose their buttons while the channels still run.
      await delivery.approvalButtons.settled();
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
      const web = await wireWebConsole({
        web: { ...config.web, listen: webListen },
        ...(reload ? { configFile: paths.configFile } : {}),
        store,
        approvals,
        events,
        queue,
        control,
        live,
        spend,
        registry,
        groupsChanged: prestartRefresh,
        reloader: lateReloader.get,
        adminChats,
        adminChat: local.adminConversation,
        ...(doctor ? { doctor } : {}),
        memoryNotes: createMemoryNotes({
          memory: store.memory,
          groupDir: (groupId) => path.join(paths.groupsDir, groupId),
        }),
        clock,
        logger,
      });
      lateWeb.set(web);
      closers.push('web console', () => web.close());
      logger.info({ url: web.baseUrl }, 'web console listening');
    }

    const groupDir = (groupId: string) => path.join(paths.groupsDir, groupId);
    const { ingest, ingestMedia, typing } = wireIngest({
      store,
      live,
      queue,
      channelFor: (name) => channels.get(name),
      events,
      adminCommands: wireAdminCommands({
        approvals,
        spend,
        cancelTask: createOwnerTaskCancel({ tasks: store.tasks, scheduler, audit: store.audit }),
        webLogin: (issuedTo) => lateWeb.get()?.loginLink(issuedTo),
        store,
        adminChats,
        enqueue: dispatcher.enqueue,
        redact,
        logger,
      }),
      groupDir,
      quotaProblem: groupRoomCheck(groupDir, () => live().containers.group_quota_mb),
      runtime,
      clock,
      logger,
    });
    closers.push('typing indicator', () => typing.stop());

    step = 'setting up the configured channels';
    const configured = createConfiguredChannels(registry, {
      dataDirOf: (name) => channelDataDir(paths, name),
      secret,
      state: (name) => store.channelState(name),
      assistantName: config.assistant.name,
      clock,
      logger,
    });
    for (const ch of [local.channel, ...configured, ...extraChannels]) channels.set(ch.name, ch);
    const channelNotices = createChannelNotices({ notify: adminChats.notify, running: () => running });
    await startChannels(channels.values(), {
      store,
      ingest,
      ingestMedia,
      statuses,
      onStatusChanged: channelNotices.statusChanged,
      onChatMoved: delivery.outcomes.rebind,
      registerStop: (name, stop) => channelClosers.push(name, stop),
      onStep: (s) => (step = s),
      logger,
    });
    running = true;

    step = 'taking over unfinished work';
    // Only now, holding the socket (one host per data folder), is it safe to take over unfinished work.
    for (const groupId of recoverInterruptedRuns(store, logger, { enqueue: dispatcher.enqueue, notifyOwner }))
      queue.notify(groupId);
    // Tasks that fell due while the host was down fire once now, then on their own timer.
    scheduler.start();
    const retention = startRetention(store, config.retention, clock, logger);
    closers.push('retention', () => retention.stop());
    closers.push('memory backfill', startMemoryBackfill(store.memory, logger));
    closers.push(
      'daily summary',
      startDailySummary({ spend, live, onConfigChange: source.subscribe, adminChats, clock, logger }),
    );
    dispatcher.kick();
    if (reload) {
      step = 'watching the config file';
      const { reloader, stop } = wireConfigReload({
        configFile: paths.configFile,
        reload,
        source,
        groups: store.groups,
        channelStates: () =>
          [...channels.values()].map((ch) => ({
            name: ch.name,
            state: (statuses.get(ch.name) ?? ch.status()).state,
          })),
        adminChats,
        // A pre-started container made under the old config (its TZ, its mounts) is replaced now, not
        // discarded when its group's next run finds it stale.
        onApplied: prestartRefresh,
        logger,
      });
      lateReloader.set(reloader);
      closers.push('config watch', () => stop());
    }
    logger.info({ socket: paths.socketFile, groups: store.groups.list().length }, 'host started');

    return {
      store,
      whenIdle: () => queue.whenIdle(),
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
