import { Hono } from 'hono';
import { getCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import { systemClock } from '../../time/clock.ts';
import { SESSION_COOKIE, type WebConsoleDeps, type WebEnv } from '../web-console-deps.ts';

const COALESCE_MS = 100;
const HEARTBEAT_MS = 25_000;

/**
 * Live updates (mounted at `/events`, server-sent events): the host's events named by the part of a page they
 * change (`approvals`, `runs`, `chat`), which the console script re-fetches.
 */
export function createEventsRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const clock = deps.clock ?? systemClock;
  const app = new Hono<WebEnv>();
  app.get('/', (c) => {
    const cookie = getCookie(c, SESSION_COOKIE);
    return streamSSE(c, async (stream) => {
      // Bursts (a run's several group-state events) collapse into one message per kind per 100 ms, so an
      // open page adds one fetch per burst, not one per event, to the host's work.
      const due = new Set<string>();
      let cancelFlush: (() => void) | undefined;
      const flush = () => {
        cancelFlush = undefined;
        // Every message re-checks the session: a revoked or expired one gets no more news.
        if (!deps.auth.authenticate(cookie)) {
          void stream.writeSSE({ event: 'bye', data: 'signed out' }).then(() => stream.abort());
          return;
        }
        for (const event of due) void stream.writeSSE({ event, data: String(clock.now()) });
        due.clear();
      };
      const push = (event: string) => {
        due.add(event);
        cancelFlush ??= clock.setTimer(() => {
          try {
            flush();
          } catch (err) {
            deps.logger.error({ err }, 'a live update could not be sent');
          }
        }, COALESCE_MS);
      };
      const onApproval = () => push('approvals');
      const onGroup = () => push('runs');
      const onDelivered = () => push('chat');
      deps.events.on('approval-changed', onApproval);
      deps.events.on('group-state', onGroup);
      deps.events.on('outbox-delivered', onDelivered);
      let cancelBeat: () => void = () => {};
      const beat = () => {
        void stream.write(': keep-alive\n\n');
        cancelBeat = clock.setTimer(beat, deps.heartbeatMs ?? HEARTBEAT_MS);
      };
      cancelBeat = clock.setTimer(beat, deps.heartbeatMs ?? HEARTBEAT_MS);
      await new Promise<void>((resolve) => stream.onAbort(resolve));
      // Nothing of a closed stream may run later (on a stopping host, after the database closed).
      cancelFlush?.();
      cancelBeat();
      deps.events.off('approval-changed', onApproval);
      deps.events.off('group-state', onGroup);
      deps.events.off('outbox-delivered', onDelivered);
    });
  });
  return app;
}
