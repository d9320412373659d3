import fs from 'node:fs';
import type { ChannelStatus } from '../channels/channel.ts';
import { firstWords } from '../channels/delivery-outcomes.ts';
import type { HostStatus, PrestartStatus, WebLoginLink } from '../channels/local/local-api.ts';
import { listenOnSocket, sendJson, type RouteHandler } from '../channels/local/socket-server.ts';
import { describeReload } from '../config/config-reload.ts';
import type { ConfigReloader } from '../config/config-reloader.ts';
import type { GroupQueue } from '../router/group-queue.ts';
import type { McpServerStatus } from '../services/mcp/mcp-connection.ts';
import type { CredentialStatus } from '../gateway/credential/credential-status.ts';
import type { Store } from '../store/store.ts';

export interface ControlApiDeps {
  store: Pick<Store, 'outbox' | 'approvals' | 'retention' | 'groups' | 'tasks'>;
  databaseFile: string;
  startedAt: string;
  assistantName(): string;
  /** Where this host runs its agents' turns (`[runner]` as it started), for `status`. */
  runner(): string;
  /** Each read at request time: the socket answers before the queue, the runtime and the reloader exist. */
  queue(): Pick<GroupQueue, 'snapshot'> | undefined;
  runtime():
    | {
        services?: { status(): McpServerStatus[] };
        credentials?: { status(): CredentialStatus[] };
        prestart?: { status(): PrestartStatus; refresh(): void };
      }
    | undefined;
  reloader(): Pick<ConfigReloader, 'reload'> | undefined;
  channels(): { name: string; status: ChannelStatus; adminChat: string | undefined }[];
  /** The web console, when `[web] listen` is set and it runs. */
  web(): { loginLink(issuedTo: string): WebLoginLink } | undefined;
}

/** 0 for a file that is not there (no WAL between checkpoints). */
function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

/** What `carapace status` and the web console's Health page show: the live host, read now. */
export function readHostStatus(deps: Omit<ControlApiDeps, 'reloader' | 'web'>): HostStatus {
  const { store } = deps;
  const runtime = deps.runtime();
  return {
    pid: process.pid,
    startedAt: deps.startedAt,
    assistant: deps.assistantName(),
    queue: deps.queue()?.snapshot() ?? { active: [], waiting: [], retrying: [] },
    outboxPending: store.outbox.pendingCount(),
    outboxDead: store.outbox.deadCount(),
    outboxFailing: store.outbox.failing(5).map((o) => ({
      id: o.id,
      groupId: o.groupId,
      channel: o.channel,
      chatId: o.chatId,
      begins: firstWords(o.text),
      attempts: o.attempts,
      connectionDrops: o.connectionDrops,
      lastError: o.lastError,
    })),
    approvalsPending: store.approvals.listPending().length,
    runner: deps.runner(),
    database: {
      bytes: fileSize(deps.databaseFile),
      walBytes: fileSize(`${deps.databaseFile}-wal`),
      rows: store.retention.sizes(),
    },
    ...(runtime?.prestart ? { prestart: runtime.prestart.status() } : {}),
    ...(runtime?.services ? { services: runtime.services.status() } : {}),
    ...(runtime?.credentials ? { credentials: runtime.credentials.status() } : {}),
    channels: deps.channels().map((ch) => ({ name: ch.name, ...ch.status, adminChat: ch.adminChat })),
    groups: store.groups.list().map((g) => ({
      id: g.id,
      channel: g.channel,
      admin: g.isAdmin,
      cursor: g.agentCursor,
      openTasks: store.tasks.openCount(g.id),
    })),
  };
}

/** The console socket's host routes besides the console channel's own: status, groups changed, reload. */
export function createControlRoutes(deps: ControlApiDeps): Record<string, RouteHandler> {
  return {
    'GET /v1/status': (_req, res) => {
      sendJson(res, 200, readHostStatus(deps));
    },
    // `carapace web login`: a one-time link to the web console (the socket's file permissions are the proof).
    'POST /v1/web/login': (_req, res) => {
      const web = deps.web();
      if (!web) {
        sendJson(res, 409, {
          error: 'the web console is off: set [web] listen = "127.0.0.1:8750" in config.toml and restart',
        });
        return;
      }
      sendJson(res, 200, web.loginLink('cli'));
    },
    // The CLI changes groups in the database directly; this tells the host to drop what they made stale.
    'POST /v1/groups/changed': (_req, res) => {
      deps.runtime()?.prestart?.refresh();
      sendJson(res, 200, { ok: true });
    },
    // `carapace config set` and `rollback` wrote the file and want to know what the host made of it.
    'POST /v1/config/reload': async (_req, res) => {
      const reloader = deps.reloader();
      if (!reloader) {
        sendJson(res, 409, { error: 'this host does not reload its configuration; restart it' });
        return;
      }
      const outcome = await reloader.reload('cli');
      sendJson(res, 200, { kind: outcome.kind, ...describeReload(outcome) });
    },
  };
}

/**
 * The control socket with the console's and the control routes; its close ends open connections first (a
 * `chat` client holds one), so a stop is not held by a client.
 */
export async function openControlSocket(
  socketFile: string,
  routes: Record<string, RouteHandler>,
): Promise<() => Promise<void>> {
  const server = await listenOnSocket(socketFile, routes);
  return async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}
