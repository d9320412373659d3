import type { Logger } from '../../logging/logger.ts';
import type { ChannelStatus } from '../channel.ts';
import { classifyClose, type CloseVerdict } from './disconnect-reason.ts';
import { backoffMs } from '../../time/backoff.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';

/** One live connection attempt, as the controller sees it. */
export interface ConnectionHandle {
  /** Ends the connection; the controller has already stopped listening to it. */
  end(reason: string): void;
}

/** What a connection reports back; calls from a connection the controller has left are ignored. */
export interface ConnectionEvents {
  opened(): void;
  closed(statusCode: number | undefined, message: string): void;
  /** Anything arrived from the server: the watchdog's sign of life. */
  activity(): void;
}

export interface ReconnectPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  /** ± fraction of each delay, so many hosts do not reconnect in step. */
  jitter: number;
  /** A connection open this long was healthy: the failure count starts again from zero. */
  healthyAfterMs: number;
  /** Failed attempts in a row after which the breaker opens and the channel stops. */
  maxFailures: number;
  /** An open connection from which nothing arrives for this long is dead (WhatsApp pings every 30 s). */
  silentAfterMs: number;
}

export const DEFAULT_RECONNECT_POLICY: ReconnectPolicy = {
  initialDelayMs: 2_000,
  maxDelayMs: 30_000,
  jitter: 0.2,
  healthyAfterMs: 60_000,
  maxFailures: 10,
  silentAfterMs: 90_000,
};

export interface ConnectionControllerDeps<C extends ConnectionHandle> {
  connect(events: ConnectionEvents): C;
  onStatus(status: ChannelStatus): void;
  /** A close reconnecting cannot mend (logged out, replaced…), before the status says so. */
  onTerminal?(verdict: Extract<CloseVerdict, { kind: 'terminal' }>): void;
  logger: Logger;
  policy?: Partial<ReconnectPolicy>;
  /** The host's clock: the reconnect backoff, the watchdog and `whenOpen`'s wait run on it. */
  clock?: Clock;
  /** Draws the backoff's jitter. */
  random?: () => number;
}

export interface ConnectionController<C> {
  start(): void;
  /** Ends the connection and every timer; nothing happens afterwards. */
  stop(reason?: string): void;
  status(): ChannelStatus;
  /** The open connection, if there is one now. */
  current(): C | undefined;
  /** The open connection, waiting up to `timeoutMs` for a reconnect; undefined if none came. */
  whenOpen(timeoutMs: number): Promise<C | undefined>;
  /** Timers armed to reconnect: never more than one (for tests and status). */
  pendingReconnects(): number;
}

/**
 * The one place that decides when the WhatsApp socket is (re)opened: exactly one reconnect timer,
 * exponential backoff with jitter reset after a healthy period, an immediate reconnect when WhatsApp asks
 * for a restart (515), terminal states for closes no retry can mend, a circuit breaker after repeated
 * failures, and a watchdog per connection for a socket that is open but silent. It never throws and never
 * exits the process: whatever happens becomes a status.
 */
export function createConnectionController<C extends ConnectionHandle>(
  deps: ConnectionControllerDeps<C>,
): ConnectionController<C> {
  const policy = { ...DEFAULT_RECONNECT_POLICY, ...deps.policy };
  const clock = deps.clock ?? systemClock;
  const log = deps.logger;

  let generation = 0;
  let conn: C | undefined;
  let open = false;
  let openedAt: number | undefined;
  let lastActivity = 0;
  let failures = 0;
  let quickRestarts = 0;
  let lastError = '';
  let cancelReconnect: (() => void) | undefined;
  let cancelWatchdog: (() => void) | undefined;
  let finished = false;
  let current: ChannelStatus = {
    state: 'stopped',
    reason: 'not started',
    since: new Date(clock.now()).toISOString(),
  };
  const waiters = new Set<{ resolve(c: C | undefined): void; cancel(): void }>();

  const setStatus = (state: ChannelStatus['state'], reason?: string) => {
    current = { state, ...(reason ? { reason } : {}), since: new Date(clock.now()).toISOString() };
    deps.onStatus(current);
  };

  const settleWaiters = (c: C | undefined) => {
    for (const w of waiters) {
      w.cancel();
      w.resolve(c);
    }
    waiters.clear();
  };

  const clearWatchdog = () => {
    cancelWatchdog?.();
    cancelWatchdog = undefined;
  };

  const armWatchdog = (gen: number, ms: number) => {
    clearWatchdog();
    cancelWatchdog = clock.setTimer(() => {
      cancelWatchdog = undefined;
      if (gen !== generation || finished) return;
      const silentFor = clock.now() - lastActivity;
      if (silentFor < policy.silentAfterMs) return armWatchdog(gen, policy.silentAfterMs - silentFor);
      const message = `nothing arrived from WhatsApp for ${Math.round(silentFor / 1000)} s`;
      log.warn({ silentForMs: silentFor }, 'WhatsApp socket silent; reconnecting');
      leave(message);
      onClosed(408, message);
    }, ms);
  };

  /** Stops listening to the current connection and ends it. */
  const leave = (reason: string) => {
    generation++;
    clearWatchdog();
    const c = conn;
    conn = undefined;
    open = false;
    if (c) {
      try {
        c.end(reason);
      } catch (err) {
        log.debug({ err }, 'ending a WhatsApp connection failed');
      }
    }
  };

  const connectNow = () => {
    if (finished) return;
    const gen = ++generation;
    open = false;
    openedAt = undefined;
    lastActivity = clock.now();
    if (current.state !== 'connecting')
      setStatus('connecting', lastError ? `reconnecting after: ${lastError}` : undefined);
    const events: ConnectionEvents = {
      opened: () => {
        if (gen !== generation || finished) return;
        open = true;
        openedAt = clock.now();
        lastActivity = openedAt;
        lastError = '';
        log.info({}, 'WhatsApp connected');
        setStatus('connected');
        settleWaiters(conn);
      },
      closed: (statusCode, message) => {
        if (gen !== generation || finished) return;
        leave(message);
        onClosed(statusCode, message);
      },
      activity: () => {
        if (gen === generation) lastActivity = clock.now();
      },
    };
    try {
      conn = deps.connect(events);
    } catch (err) {
      // A socket that cannot even be built (bad URL, bad auth state) is a failed attempt like any other.
      generation++;
      conn = undefined;
      onClosed(undefined, errorMessage(err));
      return;
    }
    armWatchdog(gen, policy.silentAfterMs);
  };

  const onClosed = (statusCode: number | undefined, message: string) => {
    const verdict = classifyClose(statusCode);
    const wasHealthy = openedAt !== undefined && clock.now() - openedAt >= policy.healthyAfterMs;
    openedAt = undefined;
    lastError = statusCode ? `${message} (${statusCode})` : message;
    if (verdict.kind === 'terminal') {
      log.error({ statusCode, message }, 'WhatsApp connection ended for good');
      finished = true;
      deps.onTerminal?.(verdict);
      settleWaiters(undefined);
      setStatus(verdict.state, verdict.reason);
      return;
    }
    if (wasHealthy) {
      failures = 0;
      quickRestarts = 0;
    }
    if (verdict.kind === 'restart' && quickRestarts < 3) {
      quickRestarts++;
      log.info({ statusCode }, 'WhatsApp asked for a restart; reconnecting now');
      connectNow();
      return;
    }
    failures++;
    if (failures >= policy.maxFailures) {
      finished = true;
      settleWaiters(undefined);
      const reason =
        `WhatsApp failed ${failures} times in a row (last: ${lastError}); the channel is off until the host ` +
        "restarts. Check the machine's internet connection and the phone's Linked devices, then restart the host.";
      log.error({ failures, lastError }, 'WhatsApp circuit breaker open');
      setStatus('stopped', reason);
      return;
    }
    const delay = backoffMs(failures - 1, {
      baseMs: policy.initialDelayMs,
      maxMs: policy.maxDelayMs,
      jitter: policy.jitter,
      random: deps.random ?? Math.random,
    });
    log.warn({ statusCode, message, failures, delayMs: delay }, 'WhatsApp disconnected; reconnecting');
    setStatus('connecting', `reconnecting in ${Math.ceil(delay / 1000)} s after: ${lastError}`);
    cancelReconnect?.();
    cancelReconnect = clock.setTimer(() => {
      cancelReconnect = undefined;
      connectNow();
    }, delay);
  };

  return {
    start() {
      if (finished || conn || cancelReconnect) return;
      connectNow();
    },
    stop(reason = 'stopped') {
      cancelReconnect?.();
      cancelReconnect = undefined;
      const wasFinished = finished;
      finished = true;
      leave(reason);
      settleWaiters(undefined);
      if (!wasFinished || current.state === 'connected' || current.state === 'connecting')
        setStatus('stopped', reason);
    },
    status: () => current,
    current: () => (open ? conn : undefined),
    whenOpen(timeoutMs) {
      if (open && conn) return Promise.resolve(conn);
      if (finished) return Promise.resolve(undefined);
      return new Promise((resolve) => {
        const waiter = {
          resolve,
          cancel: clock.setTimer(() => {
            waiters.delete(waiter);
            resolve(undefined);
          }, timeoutMs),
        };
        waiters.add(waiter);
      });
    },
    pendingReconnects: () => (cancelReconnect ? 1 : 0),
  };
}
