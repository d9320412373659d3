import path from 'node:path';
import type { Logger } from '../logging/logger.ts';
import type { AdminChats } from '../admin/admin-chats.ts';
import type { ApprovalService } from '../admin/approval-service.ts';
import { registerGroup } from '../admin/register-group.ts';
import type { SpendView } from '../admin/spend-view.ts';
import type { ChannelRegistry } from '../channels/registry.ts';
import { createConfigFileStore } from '../config/config-file-store.ts';
import { reloadWhenRunning } from '../config/config-reload.ts';
import type { ConfigReloader } from '../config/config-reloader.ts';
import type { HostConfig } from '../config/schema.ts';
import type { HostStatus } from '../channels/local/local-api.ts';
import { createMemoryNotes } from '../memory/memory-notes.ts';
import type { GroupQueue } from '../router/group-queue.ts';
import type { HostEvents } from '../store/host-events.ts';
import type { Store } from '../store/store.ts';
import type { Clock } from '../time/clock.ts';
import { createWebAuth } from './web-auth.ts';
import { startWebConsole, type WebConsole } from './web-server.ts';

export interface WebConsoleWiringDeps {
  /** `[web]` as the host started (the console does not move while it runs); no `listen`: no console. */
  web: HostConfig['web'];
  /** Where each group's folder is, for the memory notes page. */
  groupsDir: string;
  /** config.toml, when the host runs on the file and applies its edits. */
  configFile?: string;
  store: Store;
  approvals: ApprovalService;
  events: HostEvents;
  queue: Pick<GroupQueue, 'snapshot'>;
  /** The host's status, as `carapace status` reads it. */
  status(): HostStatus;
  live(): HostConfig;
  spend: Pick<SpendView, 'report'>;
  registry: ChannelRegistry;
  /** Groups changed: a pre-started container may no longer serve (as after the CLI's `groups/changed`). */
  groupsChanged(): void;
  reloader(): ConfigReloader | undefined;
  adminChats: Pick<AdminChats, 'notify'>;
  adminChat: WebConsoleDepsOf['adminChat'];
  doctor?: WebConsoleDepsOf['doctor'];
  clock: Clock;
  /** Names the step a failure belongs to. */
  onStep(step: string): void;
  logger: Logger;
}

type WebConsoleDepsOf = Parameters<typeof startWebConsole>[1];

/**
 * The web console on `[web] listen`: its sign-in, and every page's source in the running host. Without
 * `listen` the host runs without it (undefined).
 */
export async function wireWebConsole(deps: WebConsoleWiringDeps): Promise<WebConsole | undefined> {
  const { store, clock } = deps;
  const listen = deps.web.listen;
  if (listen === undefined) return undefined;
  const web = { ...deps.web, listen };
  deps.onStep(`starting the web console on ${listen}`);
  const running = await startWebConsole(web, {
    auth: createWebAuth({
      sessions: store.webSessions,
      audit: store.audit,
      clock,
      linkTtlMs: web.login_link_ttl_ms,
      sessionTtlMs: web.session_ttl_ms,
    }),
    approvals: deps.approvals,
    store,
    events: deps.events,
    queue: () => deps.queue.snapshot(),
    status: deps.status,
    config: deps.live,
    spend: () => deps.spend.report(),
    ...(deps.doctor ? { doctor: deps.doctor } : {}),
    registerGroup: (r) => {
      const g = registerGroup({ store, registry: deps.registry }, r);
      deps.groupsChanged();
      return g;
    },
    ...(deps.configFile !== undefined
      ? {
          configFile: {
            store: createConfigFileStore({ configFile: deps.configFile }),
            reload: reloadWhenRunning(deps.reloader, 'web'),
          },
        }
      : {}),
    notifyOwner: (key, text) => deps.adminChats.notify(key, text),
    adminChat: deps.adminChat,
    memoryNotes: createMemoryNotes({
      memory: store.memory,
      groupDir: (groupId) => path.join(deps.groupsDir, groupId),
    }),
    clock,
    logger: deps.logger.child({ subsystem: 'web' }),
  });
  deps.logger.info({ url: running.baseUrl }, 'web console listening');
  return running;
}
