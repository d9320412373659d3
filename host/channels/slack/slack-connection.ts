import { LogLevel, SocketModeClient, type Logger as SlackLogger } from '@slack/socket-mode';
import { ErrorCode, type WebClient } from '@slack/web-api';
import type { Logger } from '../../logging/logger.ts';
import type { ChannelState, ChannelStatus } from '../channel.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { sleepOn } from '../../time/clock-timers.ts';
import type { SlackIdentity } from './slack-inbound.ts';

/** Auth failures no retry cures: the owner has to fix the token. */
const BAD_TOKEN = new Set([
  'invalid_auth',
  'not_authed',
  'token_revoked',
  'token_expired',
  'account_inactive',
  'not_allowed_token_type',
]);

export interface SlackConnectionDeps {
  web: WebClient;
  appToken: string;
  apiUrl: string;
  /** Why the tokens cannot work (missing, wrong prefix), before any call; undefined when they may. */
  tokenProblem: string | undefined;
  logger: Logger;
  onStatus(status: ChannelStatus): void;
  clock?: Clock;
  /** First reconnect delay; doubles up to a minute. */
  retryBaseMs?: number;
}

/** The SDK's logger interface onto ours, at debug: the adapter logs what matters itself. */
function sdkLogger(logger: Logger): SlackLogger {
  let level = LogLevel.DEBUG;
  const log = (...msg: unknown[]) => logger.debug({ slack: msg.map(String).join(' ') }, 'slack sdk');
  return {
    debug: log,
    info: log,
    warn: log,
    error: log,
    setLevel: (l) => void (level = l),
    getLevel: () => level,
    setName: () => undefined,
  };
}

/**
 * The Socket Mode connection and the status it amounts to. auth.test first (a bad token is needs-login
 * with the fix, never retried), then apps.connections.open and the WebSocket. The SDK's own reconnects are
 * off: it gives up silently on some failures, so this reconnects itself, with backoff on the host's clock,
 * and every drop and return shows in the status.
 */
export function createSlackConnection(deps: SlackConnectionDeps) {
  const { web, logger } = deps;
  const clock = deps.clock ?? systemClock;
  const base = deps.retryBaseMs ?? 1_000;
  const isoNow = () => new Date(clock.now()).toISOString();
  const socket = new SocketModeClient({
    appToken: deps.appToken || 'xapp-missing',
    autoReconnectEnabled: false,
    logger: sdkLogger(logger),
    clientOptions: { slackApiUrl: deps.apiUrl, retryConfig: { retries: 0 } },
  });
  let status: ChannelStatus = { state: 'stopped', since: isoNow() };
  let identity: SlackIdentity | undefined;
  let stop: AbortController | undefined;
  let connecting = false;

  function setStatus(state: ChannelState, reason?: string): void {
    if (status.state === state && status.reason === reason) return;
    status = { state, ...(reason ? { reason } : {}), since: isoNow() };
    deps.onStatus(status);
  }

  /** auth.test until it answers; false when the token is refused (needs-login) or the channel stopped. */
  async function authenticate(signal: AbortSignal): Promise<boolean> {
    for (let delay = base; !signal.aborted; delay = Math.min(delay * 2, 60_000)) {
      try {
        const me = await web.auth.test();
        identity = {
          userId: me.user_id ?? '',
          ...(me.bot_id ? { botId: me.bot_id } : {}),
          ...(me.team ? { team: me.team } : {}),
        };
        return true;
      } catch (err) {
        const code =
          (err as { code?: string; data?: { error?: string } }).code === ErrorCode.PlatformError
            ? (err as { data: { error?: string } }).data.error
            : undefined;
        if (code && BAD_TOKEN.has(code)) {
          setStatus(
            'needs-login',
            `Slack refused the bot token (${code}): put a valid xoxb- token in SLACK_BOT_TOKEN and restart`,
          );
          return false;
        }
        setStatus('connecting', `Slack not reachable: ${errorMessage(err)}`);
        await sleepOn(clock)(delay, signal).catch(() => undefined);
      }
    }
    return false;
  }

  /** Opens the socket until it is up; one loop at a time, whoever noticed the drop. */
  async function connect(signal: AbortSignal): Promise<void> {
    if (connecting) return;
    connecting = true;
    try {
      for (let delay = base; !signal.aborted; delay = Math.min(delay * 2, 60_000)) {
        try {
          await socket.start();
          if (!signal.aborted) setStatus('connected');
          return;
        } catch (err) {
          if (signal.aborted) return;
          const code = (err as { data?: { error?: string } }).data?.error;
          if (code && BAD_TOKEN.has(code)) {
            setStatus(
              'needs-login',
              `Slack refused the app token (${code}): put a valid xapp- token with connections:write in SLACK_APP_TOKEN and restart`,
            );
            return;
          }
          setStatus('connecting', `Socket Mode connection failed: ${errorMessage(err)}`);
          await sleepOn(clock)(delay, signal).catch(() => undefined);
        }
      }
    } finally {
      connecting = false;
    }
  }

  socket.on('disconnected', () => {
    if (!stop || stop.signal.aborted || connecting) return;
    setStatus('connecting', 'the Socket Mode connection dropped; reconnecting');
    void connect(stop.signal);
  });

  return {
    socket,
    identity: () => identity,
    status: () => status,
    started: () => stop !== undefined && !stop.signal.aborted,

    async start(): Promise<void> {
      stop = new AbortController();
      if (deps.tokenProblem) {
        setStatus('needs-login', deps.tokenProblem);
        return;
      }
      setStatus('connecting', 'connecting to Slack');
      if (!(await authenticate(stop.signal))) return;
      await connect(stop.signal);
    },

    async stop(): Promise<void> {
      stop?.abort();
      await socket.disconnect().catch(() => undefined);
      setStatus('stopped');
    },
  };
}
