import type { Context } from 'hono';
import { createConsoleFormat, type ConsoleFormat } from './format.ts';
import { layout, type Html } from './html.ts';
import type { WebConsoleDeps, WebEnv } from './web-console-deps.ts';

type PageStatus = 200 | 400 | 401 | 403 | 404 | 409 | 503;

export interface ConsoleView {
  now(): number;
  /** How times, durations and costs are written; read at each request, so a reloaded timezone applies to the next page. */
  fmt(): ConsoleFormat;
  /** A whole page in the console's layout; signed in, it carries the session's CSRF token and the owner's zone. */
  render(c: Context<WebEnv>, title: string, body: Html, status?: PageStatus): Response;
}

/** The page frame every resource renders into. */
export function consoleView(deps: Pick<WebConsoleDeps, 'config' | 'clock'>): ConsoleView {
  const now = () => (deps.clock ?? Date).now();
  return {
    now,
    fmt: () => createConsoleFormat({ timeZone: deps.config().assistant.timezone, now }),
    render(c, title, body, status = 200) {
      const csrf = c.get('auth')?.csrf;
      return c.html(
        layout({
          title,
          path: c.req.path,
          body,
          ...(csrf ? { csrf, timeZone: deps.config().assistant.timezone } : {}),
        }),
        status,
      );
    },
  };
}
