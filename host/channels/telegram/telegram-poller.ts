import { createConcurrentSink, createRunner, createSource, type RunnerHandle } from '@grammyjs/runner';
import { GrammyError, type Api } from 'grammy';
import type { Update } from 'grammy/types';
import type { Logger } from '../../logging/logger.ts';
import type { ChannelStateStore } from '../channel.ts';
import { backoffMs } from '../../time/backoff.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { sleepOn } from '../../time/clock-timers.ts';

/** The update kinds the adapter handles; everything else is never fetched. */
export const ALLOWED_UPDATES = ['message', 'edited_message', 'callback_query', 'my_chat_member'] as const;

/** The key of the first update id not yet handled, in the channel's durable state. */
export const OFFSET_KEY = 'update_offset';

export interface PollerDeps {
  api: Pick<Api, 'getUpdates'>;
  /** Handles one update; the update counts as done (and is confirmed to Telegram) when this settles. */
  handle(update: Update): Promise<void>;
  state: ChannelStateStore;
  pollTimeoutS: number;
  /** How long past the poll timeout a getUpdates may stay unanswered before the watchdog restarts it. */
  watchdogGraceMs: number;
  onConnected(): void;
  onTrouble(reason: string): void;
  logger: Logger;
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Times the watchdog and the backoff (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
}

export interface Poller {
  start(): void;
  stop(): Promise<void>;
}

/**
 * Long polling on @grammyjs/runner's source and concurrent sink, with a supplier of our own for three
 * things the stock fetcher does not do:
 * - Durable offset. getUpdates confirms every update below its `offset`, so the offset passed is the
 *   first update not yet handled, persisted after each one: a restart neither loses an update that was
 *   fetched but not handled, nor replays one that was. Updates fetched again in this process are skipped.
 * - Watchdog. A getUpdates that has not completed within its timeout plus a grace is aborted and asked
 *   again: a half-open connection cannot silence the bot.
 * - 409 Conflict (another process polls this token, or a webhook is set) is logged with its cause and
 *   backed off instead of retried at once, so two instances do not keep knocking each other off.
 */
export function createPoller(deps: PollerDeps): Poller {
  const { api, state, logger } = deps;
  const backoffBase = deps.backoffBaseMs ?? 500;
  const backoffMax = deps.backoffMaxMs ?? 60_000;
  const clock = deps.clock ?? systemClock;
  // A stop ends the wait early; the loop then sees the aborted signal.
  const sleep = (ms: number, signal: AbortSignal) => sleepOn(clock)(ms, signal).catch(() => undefined);
  // Highest update id handed to the sink in this process.
  let seen = Number(state.get(OFFSET_KEY) ?? '0') - 1;
  // Fetched and not yet handled, each with the promise that settles when it is.
  const pending = new Map<number, { handled: Promise<void>; settle(): void }>();
  let persisted = seen + 1;
  let runner: RunnerHandle | undefined;

  function persistOffset(): void {
    const safe = pending.size > 0 ? Math.min(...pending.keys()) : seen + 1;
    if (safe > persisted) {
      persisted = safe;
      state.set(OFFSET_KEY, String(safe));
    }
  }

  function describe409(err: GrammyError): string {
    return /webhook/i.test(err.description)
      ? 'a webhook is set for this bot token while Carapace polls; it deletes the webhook at start, so another ' +
          'program set it again: stop that program or switch Carapace to mode = "webhook"'
      : 'another program is polling this bot token (two Carapace hosts, or another bot on the same token); ' +
          'stop the other one: Telegram serves one poller per token';
  }

  async function supply(batchSize: number, signal: AbortSignal): Promise<Update[]> {
    let failures = 0;
    let nothingNew = false;
    while (!signal.aborted) {
      if (nothingNew && pending.size > 0) {
        // Telegram answered with updates still being handled; wait for one to finish instead of spinning.
        const handled = [...pending.values()].map((p) => p.handled);
        await Promise.race([...handled, new Promise((r) => signal.addEventListener('abort', r))]);
        nothingNew = false;
      }
      const attempt = new AbortController();
      const onAbort = () => attempt.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      const stallAfter = deps.pollTimeoutS * 1000 + deps.watchdogGraceMs;
      const cancelWatchdog = clock.setTimer(() => attempt.abort(new Error('stalled')), stallAfter);
      let updates: Update[];
      try {
        updates = await api.getUpdates(
          {
            offset: persisted,
            limit: Math.max(1, Math.min(batchSize, 100)),
            timeout: deps.pollTimeoutS,
            allowed_updates: [...ALLOWED_UPDATES],
          },
          // grammY types its signal with an older shim; the runtime object is the platform's own.
          attempt.signal as unknown as Parameters<Api['getUpdates']>[1],
        );
      } catch (err) {
        if (signal.aborted) break;
        failures += 1;
        const wait = backoffMs(failures - 1, { baseMs: backoffBase, maxMs: backoffMax });
        const jittered = Math.round(wait / 2 + Math.random() * (wait / 2));
        if (attempt.signal.aborted) {
          logger.warn({ stallAfterMs: stallAfter }, 'getUpdates stalled; the watchdog restarts the poll');
          deps.onTrouble(`the long poll stalled for ${Math.round(stallAfter / 1000)} s; restarted it`);
          continue;
        }
        if (err instanceof GrammyError && err.error_code === 409) {
          const cause = describe409(err);
          logger.error({ err: err.description, retryInMs: jittered }, `getUpdates conflict: ${cause}`);
          deps.onTrouble(`Telegram refuses polling (409): ${cause}`);
        } else if (err instanceof GrammyError && err.error_code === 401) {
          logger.error({}, 'getUpdates: the bot token was rejected (401)');
          deps.onTrouble(
            'Telegram rejected the bot token (401): check bot_token_env, or get a new token from @BotFather',
          );
        } else {
          logger.warn({ err: errorMessage(err), retryInMs: jittered }, 'getUpdates failed; retrying');
          deps.onTrouble(`cannot reach Telegram: ${errorMessage(err)}`);
        }
        await sleep(jittered, signal);
        continue;
      } finally {
        cancelWatchdog();
        signal.removeEventListener('abort', onAbort);
      }
      failures = 0;
      deps.onConnected();
      const fresh = updates.filter((u) => u.update_id > seen);
      if (fresh.length === 0) {
        nothingNew = updates.length > 0;
        continue;
      }
      for (const u of fresh) {
        seen = Math.max(seen, u.update_id);
        let settle!: () => void;
        const handled = new Promise<void>((r) => (settle = r));
        pending.set(u.update_id, { handled, settle });
      }
      return fresh;
    }
    return [];
  }
  const consumer = {
    consume: async (update: Update) => {
      try {
        await deps.handle(update);
      } finally {
        pending.get(update.update_id)?.settle();
        pending.delete(update.update_id);
        persistOffset();
      }
    },
  };

  return {
    start() {
      // One poller per channel, whatever calls start: two would 409 each other forever.
      if (runner?.isRunning()) return;
      const source = createSource<Update>({
        supply: (batchSize, signal) => supply(batchSize, signal as unknown as AbortSignal),
      });
      const sink = createConcurrentSink<Update, unknown>(consumer, async (err) => {
        logger.error({ err }, 'a Telegram update failed');
      });
      runner = createRunner(source, sink);
      runner.start();
      runner.task()?.catch((err: unknown) => logger.error({ err }, 'the Telegram poller stopped'));
    },
    async stop() {
      const r = runner;
      runner = undefined;
      await r?.stop();
      // Handlers in flight finish (they only store and answer), so their updates are confirmed.
      await Promise.all([...pending.values()].map((p) => p.handled));
    },
  };
}
