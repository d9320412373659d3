import { Hono } from 'hono';
import { consoleView } from '../console-view.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { healthPage } from './health-page.ts';

/** The host's status, and `carapace doctor`'s checks on request (mounted at `/health`). */
export function createHealthRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { render, fmt } = consoleView(deps);
  const app = new Hono<WebEnv>();
  app.get('/', async (c) => {
    // The doctor starts MCP servers and asks Docker: only when asked for, never on every view.
    const checks = c.req.query('doctor') === '1' && deps.doctor ? await deps.doctor() : undefined;
    return render(c, 'Health', healthPage(deps.status(), checks, deps.doctor !== undefined, fmt()));
  });
  return app;
}
