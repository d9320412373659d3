import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../logging/logger.ts';
import type { AdminChats } from '../admin/admin-chats.ts';
import type { ApprovalService } from '../admin/approval-service.ts';
import { ensureAdminGroup } from '../admin/admin-group.ts';
import { createChannelNotices } from '../admin/channel-notices.ts';
import { createSpendView, type SpendView } from '../admin/spend-view.ts';
import { startDailySummary } from '../admin/start-daily-summary.ts';
import { wireAdminCommands } from '../admin/wire-admin-commands.ts';
import { wireApprovals } from '../admin/wire-approvals.ts';
import { wireDelivery } from '../admin/wire-delivery.ts';
import type { Channel, ChannelDefinition } from '../channels/channel.ts';
import { ALWAYS_ON_CHANNELS, CHANNEL_DEFINITIONS } from '../channels/channel-definitions.ts';
import { createChannelRegistry, type ChannelRegistry } from '../channels/registry.ts';
import type { PrestartStatus } from '../channels/local/local-api.ts';
import { createLocalChannel, LOCAL_CHANNEL } from '../channels/local/local-channel.ts';
import { createRunningChannels, type RunningChannels } from '../channels/running-channels.ts';
import { createConfiguredChannels, startChannels } from '../channels/start-channels.ts';
import { createAccountChanges } from '../channels/account-changes.ts';
import { channelDataDir, ensureDataDirs, type CarapacePaths } from '../config/paths.ts';
import { reloadWhenRunning, type ReloadConfig } from '../config/config-reload.ts';
import type { ConfigReloader } from '../config/config-reloader.ts';
import { createConfigSource, type ConfigSource } from '../config/config-source.ts';
import { wireConfigReload, type ConfigFileReload } from '../config/wire-config-reload.ts';
import { capsWithAccounts } from '../config/group-defaults.ts';
import type { HostConfig } from '../config/schema.ts';
import { groupRoomCheck } from '../containers/mounts/disk-quota.ts';
import { describeRunner } from '../containers/kubernetes/runner-choice.ts';
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
import type { UsageStore } from '../gateway/spend/usage-store.ts';
import type { WriteBehindUsageStore } from '../gateway/spend/usage-write-behind.ts';
import { openUsageSettlements } from './usage-settlements.ts';
import { createHostEvents, type HostEvents } from '../store/host-events.ts';
import { openHostStore } from '../store/open-host-store.ts';
import type { NewOutboxItem } from '../store/outbox-store.ts';
import { startRetention } from '../store/start-retention.ts';
import { createMemoryNotes } from '../memory/memory-notes.ts';
import { createRememberCommand } from '../memory/remember-command.ts';
import { startMemoryBackfill } from '../memory/memory-backfill.ts';
import type { Store } from '../store/store.ts';
import { systemClock, type Clock } from '../time/clock.ts';
import { wireWebConsole, type WebConsoleWiringDeps } from '../web/wire-web-console.ts';
import type { WebConsole } from '../web/web-server.ts';
import { createCloserStack, type CloserStack } from './closer-stack.ts';
import {
  createControlRoutes,
  openControlSocket,
  readHostStatus,
  type ControlApiDeps,
} from './control-api.ts';
import { createRunDraftsFactory } from '../router/run-drafts.ts';
import type { DraftGate } from '../security/policies/draft-gate.ts';
import { lateBound, type LateBound } from './late-bound.ts';
import { HostStartError } from './start-error.ts';

export interface RunnerRuntime {
  runner: AgentRunner;
  close(): Promise<void>;
  /** Voice → text through the runtime's gateway (spend cap, usage); absent: voice notes are not transcribed. */
  transcribe?: Transcribe;
  /** The MCP servers declared in `[services]`, for `status`. */
  services?: { status(): McpServerStatus[] };
  /** The credentials declared in `[credentials]` and their last answers, for `status`. */
  credentials?: { status(): CredentialStatus[] };
  /**
   * The check every draft of a run's answer passes before it is shown (security/policies/draft-gate.ts);
   * absent: the runtime cannot check drafts, and no run streams.
   */
  draftGate?(runId: number): DraftGate;
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
  /** The host's usage store (usage-settlements.ts), for the runtime's gateway. */
  usage: UsageStore;
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
  /** The host's clock: the runner's own deadlines (a service call's) run on it. */
  clock: Clock;
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
  /**
   * The channels the config's accounts are made by (default: every channel Carapace knows); tests give a
   * definition whose adapter sends through a seam, so configured accounts stay config-driven end to end.
   */
  channelDefinitions?: readonly ChannelDefinition[];
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

/** The parts bound after the socket opens: its routes answer before the queue, the runtime and the rest exist. */
interface LateParts {
  queue: LateBound<GroupQueue>;
  executor: LateBound<RunExecutor>;
  runtime: LateBound<RunnerRuntime>;
  reloader: LateBound<ConfigReloader>;
  web: LateBound<WebConsole>;
}

/** What every wiring step below reads: the host's deps, its database and the parts shared by all. */
interface HostCore extends HostDeps {
  clock: Clock;
  source: ConfigSource;
  live(): HostConfig;
  store: Store;
  /** The gateway's spend records, written behind its requests; every reader of spend counts its queue. */
  usage: WriteBehindUsageStore;
  events: HostEvents;
  channels: RunningChannels;
  registry: ChannelRegistry;
  /** The `[channels]` accounts running now, by label; the registry reads it, account changes move it. */
  startedAccounts: { current: Record<string, unknown> };
  late: LateParts;
  closers: CloserStack;
  onStep(step: string): void;
}

/**
 * Wiring only: every subsystem gets its dependencies here and nowhere else, one named step each, built by a
 * function in the subsystem it wires. Each part that comes up pushes its closer onto one stack; a failed
 * start unwinds exactly what came up (connected channels included) and throws a HostStartError naming the
 * step, and `stop()` unwinds the same stack.
 */
export async function startHost(deps: HostDeps): Promise<RunningHost> {
  const { paths, config, logger, redact } = deps;
  const clock = deps.clock ?? systemClock;
  const source = createConfigSource(deps.reload?.start.applied ?? { config, text: '', hash: '' }, (err) =>
    logger.error({ err }, 'a subsystem failed to take a changed config'),
  );
  const closers = createCloserStack();
  let step = 'creating the data folder';
  const onStep = (s: string) => (step = s);
  try {
    ensureDataDirs(paths);
    const store = openHostStore({ ...paths, redact, clock, opened: closers.push, onStep, logger });
    const usage = openUsageSettlements({ store, clock, logger, opened: closers.push });
    ensureAdminGroup(store);
    const startedAccounts = { current: config.channels as Record<string, unknown> };
    const core: HostCore = {
      ...deps,
      clock,
      source,
      live: source.current,
      store,
      usage,
      events: createHostEvents(),
      channels: createRunningChannels(),
      startedAccounts,
      registry: createChannelRegistry({
        definitions: deps.channelDefinitions ?? CHANNEL_DEFINITIONS,
        // What runs, not what the file says: a reload moves it as it starts or stops an account.
        config: () => startedAccounts.current,
        alwaysOn: ALWAYS_ON_CHANNELS,
        dataDirOf: (name) => channelDataDir(paths, name),
      }),
      late: {
        queue: lateBound(),
        executor: lateBound(),
        runtime: lateBound(),
        reloader: lateBound(),
        web: lateBound(),
      },
      closers,
      onStep,
    };
    onStep('opening the control socket');
    const { local, control } = await openLocalControl(core);
    // The channels start last but stop only after the runs ended and the outbox stopped, so a run's last
    // reply still goes out: their closers live on a stack of their own, registered here.
    const channelClosers = channelCloserStack(closers, logger);
    const owner = wireOwnerParts(core);
    onStep('starting the agent runtime');
    const runtime = await startRuntime(core, owner);
    const queue = startRuns(core, owner, runtime);
    const spend = createSpendView({
      reporter: createSpendReporter(store.db, () => usage.flush()),
      groupIds: () => store.groups.list().map((g) => g.id),
      gateway: () => capsWithAccounts(core.live(), (id) => store.groups.get(id)),
      timezone: () => core.live().assistant.timezone,
      now: clock.now,
    });
    await openWebConsole(core, { owner, queue, spend, control, adminChat: local.adminConversation });
    const wayIn = wireWayIn(core, { owner, queue, spend, runtime });
    onStep('setting up the configured channels');
    // Set once every channel started: a channel's own shutdown on stop is not news to announce.
    let running = false;
    const applyAccounts = await startAllChannels(core, {
      local: local.channel,
      owner,
      wayIn,
      channelClosers,
      running: () => running,
    });
    running = true;
    onStep('taking over unfinished work');
    takeOverWork(core, { owner, queue, spend });
    if (deps.reload) {
      onStep('watching the config file');
      watchConfigFile(core, deps.reload, owner.delivery.adminChats, applyAccounts);
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

/**
 * What the owner is reached through: outbox delivery and the admin chats, approvals and the scheduler.
 * Neither of the last two holds a timer until the runner or the first run uses it; their closers go on the
 * stack after the queue's (startRuns), so that a stop ends pending approvals and due tasks before it waits
 * for runs.
 */
function wireOwnerParts(core: HostCore) {
  const { store, config, events, clock, logger, late } = core;
  const delivery = wireDelivery({
    store,
    channelFor: core.channels.get,
    channels: core.channels.all,
    notifyChannels: () => core.live().admin.notify,
    retry: {
      retryBaseMs: config.outbox.retry_base_ms,
      retryMaxMs: config.outbox.retry_max_ms,
      maxConnectionDrops: config.outbox.max_connection_drops,
    },
    events,
    clock,
    logger,
  });
  const approvals = wireApprovals({
    store,
    redact: core.redact,
    timeoutMs: config.security.approval_timeout_ms,
    delivery,
    events,
    clock,
    logger,
  });
  const scheduler = wireScheduler({
    store,
    notify: (id) => late.queue.get()?.notify(id),
    timezone: () => core.live().assistant.timezone,
    retryMs: config.scheduler.delivery_retry_ms,
    clock,
    logger,
  });
  const notifyOwner = (key: string, text: string) => delivery.adminChats.notify(key, text);
  return { delivery, approvals, scheduler, notifyOwner };
}

type OwnerParts = ReturnType<typeof wireOwnerParts>;

/** The agent runtime from the host's runner factory; the outbox stops before it (its closer is above). */
async function startRuntime(core: HostCore, owner: OwnerParts): Promise<RunnerRuntime> {
  const { closers, logger } = core;
  const { dispatcher } = owner.delivery;
  const runtime = await core.createRunner({
    store: core.store,
    usage: core.usage,
    logger,
    approvals: owner.approvals,
    scheduler: owner.scheduler,
    enqueueNotice: dispatcher.enqueue,
    notifyOwner: owner.notifyOwner,
    channels: core.registry,
    config: core.source,
    clock: core.clock,
    ...(core.reload ? { reloadConfig: reloadWhenRunning(core.late.reloader.get, 'proposal') } : {}),
  });
  core.late.runtime.set(runtime);
  closers.push('agent runtime', () =>
    runtime.close().catch((err: unknown) => logger.error({ err }, 'runner shutdown failed')),
  );
  closers.push('outbox delivery', () => dispatcher.stop());
  return runtime;
}

/** The run queue and its executor over the runtime's runner. */
function startRuns(core: HostCore, owner: OwnerParts, runtime: RunnerRuntime): GroupQueue {
  const { config, closers } = core;
  const { executor, queue } = wireRuns({
    store: core.store,
    usage: core.usage,
    runner: runtime.runner,
    live: core.live,
    caps: () => capsWithAccounts(core.live(), (id) => core.store.groups.get(id)),
    limits: {
      maxConcurrent: config.runs.max_concurrent,
      maxAttempts: config.runs.max_attempts,
      retryBaseMs: config.runs.retry_base_ms,
    },
    enqueueReply: owner.delivery.dispatcher.enqueue,
    notifyOwner: owner.notifyOwner,
    events: core.events,
    clock: core.clock,
    logger: core.logger,
    draftsFor: createRunDraftsFactory({
      channelFor: core.channels.get,
      ...(runtime.draftGate ? { gateFor: runtime.draftGate } : {}),
      clock: core.clock,
      logger: core.logger.child({ subsystem: 'drafts' }),
    }),
  });
  core.late.executor.set(executor);
  core.late.queue.set(queue);
  closers.push('run queue', (reason) => queue.close(reason));
  closers.push('approvals', async () => {
    owner.approvals.close();
    // Requests the stop expired lose their buttons while the channels still run.
    await owner.delivery.approvalButtons.settled();
  });
  closers.push('scheduler', () => owner.scheduler.stop());
  return queue;
}

/** The web console, when `[web] listen` is set. */
async function openWebConsole(
  core: HostCore,
  parts: {
    owner: OwnerParts;
    queue: GroupQueue;
    spend: SpendView;
    control: ControlApiDeps;
    adminChat: WebConsoleWiringDeps['adminChat'];
  },
): Promise<void> {
  const web = await wireWebConsole({
    web: core.config.web,
    groupsDir: core.paths.groupsDir,
    ...(core.reload ? { configFile: core.paths.configFile } : {}),
    store: core.store,
    approvals: parts.owner.approvals,
    events: core.events,
    queue: parts.queue,
    status: () => readHostStatus(parts.control),
    live: core.live,
    spend: parts.spend,
    registry: core.registry,
    groupsChanged: () => prestartRefresh(core),
    reloader: core.late.reloader.get,
    adminChats: parts.owner.delivery.adminChats,
    adminChat: parts.adminChat,
    ...(core.doctor ? { doctor: core.doctor } : {}),
    clock: core.clock,
    onStep: core.onStep,
    logger: core.logger,
  });
  if (!web) return;
  core.late.web.set(web);
  core.closers.push('web console', () => web.close());
}

/** Groups or the config changed: a pre-started container that may no longer serve a run is replaced now. */
function prestartRefresh(core: HostCore): void {
  core.late.runtime.get()?.prestart?.refresh();
}

/** The way in: ingest with media and the owner's commands. */
function wireWayIn(
  core: HostCore,
  parts: { owner: OwnerParts; queue: GroupQueue; spend: SpendView; runtime: RunnerRuntime },
) {
  const { store, logger } = core;
  const { owner } = parts;
  const groupDir = (groupId: string) => path.join(core.paths.groupsDir, groupId);
  const wayIn = wireIngest({
    store,
    live: core.live,
    queue: parts.queue,
    channelFor: core.channels.get,
    events: core.events,
    adminCommands: wireAdminCommands({
      approvals: owner.approvals,
      spend: parts.spend,
      cancelTask: createOwnerTaskCancel({
        tasks: store.tasks,
        scheduler: owner.scheduler,
        audit: store.audit,
      }),
      webLogin: (issuedTo) => core.late.web.get()?.loginLink(issuedTo),
      remember: createRememberCommand({
        notes: createMemoryNotes({ memory: store.memory, groupDir }),
        assistantName: () => core.live().assistant.name,
      }),
      store,
      adminChats: owner.delivery.adminChats,
      enqueue: owner.delivery.dispatcher.enqueue,
      redact: core.redact,
      logger,
    }),
    groupDir,
    quotaProblem: groupRoomCheck(groupDir, () => core.live().containers.group_quota_mb),
    runtime: parts.runtime,
    clock: core.clock,
    logger,
  });
  core.closers.push('typing indicator', () => wayIn.typing.stop());
  return wayIn;
}

/** The console channel, the configured ones and the callers' extras, started in that order. */
async function startAllChannels(
  core: HostCore,
  parts: {
    local: Channel;
    owner: OwnerParts;
    wayIn: ReturnType<typeof wireWayIn>;
    channelClosers: CloserStack;
    running(): boolean;
  },
): Promise<(channels: Record<string, unknown>) => Promise<void>> {
  const { store, channels, clock, logger } = core;
  const configuredDeps = {
    dataDirOf: (name: string) => channelDataDir(core.paths, name),
    secret: core.secret ?? (() => undefined),
    state: (name: string) => store.channelState(name),
    assistantName: core.config.assistant.name,
    clock,
    logger,
  };
  const configured = createConfiguredChannels(core.registry, configuredDeps);
  const fixed = [parts.local, ...(core.extraChannels ?? [])];
  for (const ch of [parts.local, ...configured, ...(core.extraChannels ?? [])]) channels.add(ch);
  const { adminChats, outcomes } = parts.owner.delivery;
  const channelNotices = createChannelNotices({ notify: adminChats.notify, running: parts.running });
  // Each channel's stop runs once: by the host's stop, or earlier when its account leaves the config.
  const stops = new Map<string, () => Promise<void>>();
  const startDeps = {
    store,
    ingest: parts.wayIn.ingest,
    ingestMedia: parts.wayIn.ingestMedia,
    statuses: channels.statuses,
    onStatusChanged: channelNotices.statusChanged,
    onChatMoved: outcomes.rebind,
    registerStop: (name: string, stop: () => Promise<void>) => {
      let stopped: Promise<void> | undefined;
      const once = () => (stopped ??= stop());
      stops.set(name, once);
      parts.channelClosers.push(name, once);
    },
    onStep: core.onStep,
    logger,
  };
  await startChannels(channels.all(), startDeps);
  return createAccountChanges({
    started: core.startedAccounts,
    fixed: fixed.map((ch) => ch.name),
    create: (label) => {
      const [ch] = createConfiguredChannels(core.registry, configuredDeps, label);
      if (!ch) throw new Error(`no channel is configured as ${label}`);
      return ch;
    },
    start: async (ch) => {
      channels.add(ch);
      await startChannels([ch], { ...startDeps, onStep: () => undefined });
    },
    stop: async (label) => {
      await stops.get(label)?.();
      stops.delete(label);
      channels.remove(label);
    },
    logger,
  });
}

/** config.toml watched and applied while the host runs. */
function watchConfigFile(
  core: HostCore,
  reload: ConfigFileReload,
  adminChats: AdminChats,
  applyAccounts: (channels: Record<string, unknown>) => Promise<void>,
): void {
  const { reloader, stop } = wireConfigReload({
    configFile: core.paths.configFile,
    reload,
    source: core.source,
    groups: core.store.groups,
    channelStates: () => core.channels.summary().map((ch) => ({ name: ch.name, state: ch.status.state })),
    adminChats,
    // A pre-started container made under the old config (its TZ, its mounts) is replaced now, not
    // discarded when its group's next run finds it stale.
    onApplied: () => {
      prestartRefresh(core);
      // Failures are logged by the account changes themselves; the reload's outcome is already decided.
      void applyAccounts(core.live().channels);
    },
    logger: core.logger,
  });
  core.late.reloader.set(reloader);
  core.closers.push('config watch', () => stop());
}

/** The console channel and the control socket `carapace` talks to, taken before anything else runs. */
async function openLocalControl(core: HostCore) {
  const { store, late } = core;
  const local = createLocalChannel({
    groups: store.groups,
    outbox: store.outbox,
    events: core.events,
    isBusy: (id) => late.queue.get()?.isBusy(id) ?? false,
    capRefusal: (id) => late.executor.get()?.capRefusal(id),
    ownerName: os.userInfo().username,
    logger: core.logger.child({ channel: LOCAL_CHANNEL }),
  });
  const control: ControlApiDeps = {
    store,
    databaseFile: core.paths.databaseFile,
    startedAt: new Date().toISOString(),
    assistantName: () => core.live().assistant.name,
    runner: () => describeRunner(core.config.runner),
    queue: late.queue.get,
    runtime: late.runtime.get,
    reloader: late.reloader.get,
    web: late.web.get,
    channels: core.channels.summary,
  };
  core.closers.push(
    'control socket',
    await openControlSocket(core.paths.socketFile, { ...local.routes, ...createControlRoutes(control) }),
  );
  return { local, control };
}

/** The channels' own closer stack, closed as one part of the host's (see startHost for its place). */
function channelCloserStack(closers: CloserStack, logger: Logger): CloserStack {
  const channelClosers = createCloserStack();
  closers.push('channels', async (reason) => {
    for (const f of await channelClosers.closeAll(reason))
      logger.warn({ err: f.error, channel: f.name }, 'channel did not stop cleanly');
  });
  return channelClosers;
}

/**
 * Only once the host holds its socket (one host per data folder) and its channels run: unfinished runs
 * are taken over, tasks that fell due while it was down fire once, and the background work starts.
 */
function takeOverWork(
  core: HostCore,
  parts: { owner: OwnerParts; queue: GroupQueue; spend: SpendView },
): void {
  const { store, closers, clock, logger } = core;
  const { owner } = parts;
  const { dispatcher, adminChats } = owner.delivery;
  for (const groupId of recoverInterruptedRuns(store, logger, {
    enqueue: dispatcher.enqueue,
    notifyOwner: owner.notifyOwner,
  }))
    parts.queue.notify(groupId);
  // Tasks that fell due while the host was down fire once now, then on their own timer.
  owner.scheduler.start();
  const retention = startRetention(store, core.config.retention, clock, logger);
  closers.push('retention', () => retention.stop());
  closers.push('memory backfill', startMemoryBackfill(store.memory, clock, logger));
  closers.push(
    'daily summary',
    startDailySummary({
      spend: parts.spend,
      live: core.live,
      onConfigChange: core.source.subscribe,
      adminChats,
      clock,
      logger,
    }),
  );
  dispatcher.kick();
}
