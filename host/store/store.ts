import { createApprovalsStore } from './approvals-store.ts';
import { createAuditStore } from './audit-store.ts';
import { createChannelStateStore } from './channel-state-store.ts';
import { createChatsSeenStore } from './chats-seen-store.ts';
import { createConsoleReads } from './console-reads.ts';
import { createGroupsStore } from './groups-store.ts';
import { createMemoryStore } from './memory-store.ts';
import { createMessagesStore } from './messages-store.ts';
import { DEFAULT_MIGRATIONS_DIR, migrate, readMigrations } from './migrate.ts';
import { openDatabase, type Db } from './open-database.ts';

const WAL_SIZE_AFTER_RESET = 8 * 1024 * 1024;
import { createOutboxStore } from './outbox-store.ts';
import { createRetentionStore } from './retention-store.ts';
import { createRunsStore } from './runs-store.ts';
import { createTasksStore } from './tasks-store.ts';
import { createWebSessionsStore } from './web-sessions-store.ts';

export interface StoreOptions {
  file: string;
  now?: () => Date;
  redact?: (s: string) => string;
  migrationsDir?: string;
  /**
   * The host's own connection: SQLite's automatic checkpoint is off and `startWalCheckpoints` runs them
   * in a worker thread, off the message path (wal-checkpoints.ts). Other processes (the CLI) keep the
   * automatic one.
   */
  scheduledCheckpoints?: boolean;
}

/** Opens and migrates the database and hands out one store per domain over the same connection. */
export function openStore({
  file,
  now = () => new Date(),
  redact,
  migrationsDir = DEFAULT_MIGRATIONS_DIR,
  scheduledCheckpoints = false,
}: StoreOptions) {
  const db = openDatabase(file);
  if (scheduledCheckpoints) {
    db.pragma('wal_autocheckpoint = 0');
    // A WAL that a checkpoint emptied is cut back to this when it is next rewritten from its start.
    db.pragma(`journal_size_limit = ${WAL_SIZE_AFTER_RESET}`);
  }
  try {
    migrate(db, readMigrations(migrationsDir));
  } catch (err) {
    db.close();
    throw err;
  }
  return {
    db,
    groups: createGroupsStore(db, now),
    messages: createMessagesStore(db, now),
    /** Full-text search over each group's messages and notes (memory-store.ts). */
    memory: createMemoryStore(db, now),
    runs: createRunsStore(db, now),
    outbox: createOutboxStore(db, now),
    audit: createAuditStore(db, redact, now),
    approvals: createApprovalsStore(db),
    tasks: createTasksStore(db, now),
    chatsSeen: createChatsSeenStore(db, now),
    /** The web console's login links and sessions. */
    webSessions: createWebSessionsStore(db),
    /** The web console's own reads (filtered audit, decided approvals, a run's timeline). */
    consoleReads: createConsoleReads(db),
    /** Pruning of old history, step by step (retention-runner.ts drives it). */
    retention: createRetentionStore(db, now),
    /** The durable key/value state of one channel. */
    channelState: (channel: string) => createChannelStateStore(db, channel),
    /** Runs `fn` in one transaction: every multi-row change goes through here. */
    transaction<T>(fn: () => T): T {
      return db.transaction(fn)();
    },
    close(): void {
      db.close();
    },
  };
}

export type Store = ReturnType<typeof openStore>;
export type { Db };
