import type { Logger } from '../logging/logger.ts';
import type { ApprovalService } from '../admin/approval-service.ts';
import type { GroupRegistration } from '../admin/register-group.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { HostStatus } from '../channels/local/local-api.ts';
import type { ConfigFileStore } from '../config/config-file-store.ts';
import type { HostConfig } from '../config/schema.ts';
import type { SpendReport } from '../gateway/spend/spend-report.ts';
import type { HostEvents } from '../router/host-events.ts';
import type { Store } from '../store/store.ts';
import type { MemoryNotes } from '../memory/memory-notes.ts';
import type { AdminConversation } from '../channels/local/local-channel.ts';
import type { Clock } from '../time/clock.ts';
import type { DoctorResult } from './health/health-page.ts';
import type { QueueView } from './runs/runs-page.ts';
import type { Authenticated, WebAuth } from './web-auth.ts';

/** The cookie that carries a session's secret (HttpOnly, SameSite=Strict). */
export const SESSION_COOKIE = 'carapace_session';

/** What every route of the console may read: the signed-in session, set by the session guard. */
export type WebEnv = { Variables: { auth: Authenticated } };

/** What the console is given by the host; each resource's routes take the whole of it and use their part. */
export interface WebConsoleDeps {
  auth: WebAuth;
  approvals: Pick<ApprovalService, 'decide' | 'describe' | 'pending'>;
  store: Pick<Store, 'consoleReads' | 'runs' | 'groups' | 'chatsSeen' | 'approvals' | 'audit' | 'memory'>;
  /** Notes as files in the group folders (memory/memory-notes.ts): the Memory page's forget. */
  memoryNotes?: Pick<MemoryNotes, 'forget'>;
  events: Pick<HostEvents, 'on' | 'off'>;
  queue(): QueueView;
  status(): HostStatus;
  config(): HostConfig;
  spend(): SpendReport;
  /**
   * config.toml and the running host's reload, when the host runs on the file (absent: the Config page
   * says so). A rollback here is `carapace config rollback`'s: the same plan, write and reload.
   */
  configFile?: {
    store: ConfigFileStore;
    reload(): Promise<{ ok: boolean; detail: string }>;
  };
  /** `carapace doctor`'s checks, run when the Health page asks (absent: the host was not started by the CLI). */
  doctor?(): Promise<DoctorResult[]>;
  /** `carapace groups add`'s registration, then the running host told (`registerGroup` plus a refresh). */
  registerGroup(r: GroupRegistration): GroupRecord;
  /**
   * The local console's admin group (`carapace send main`): the Message page sends the owner's words
   * through its path and shows what the host delivered there after them. Absent: no Message page.
   */
  adminChat?: AdminConversation;
  /**
   * The host's clock: now, for relative times and an approval's time left, and the event stream's timers
   * (its coalescing and keep-alive). Default: the system clock.
   */
  clock?: Clock;
  /** Tells the admin chats (a decision taken here is confirmed there). */
  notifyOwner(key: string, text: string): void;
  /** `host:port` values a request's Host (and a POST's Origin) may name: a rebound DNS name gets nothing. */
  allowedHosts: ReadonlySet<string>;
  /** Mark the cookie Secure (the console is reached over https through a proxy). */
  secureCookie: boolean;
  logger: Logger;
  /** A comment line on open event streams, so proxies keep them (default 25 s). */
  heartbeatMs?: number;
}
