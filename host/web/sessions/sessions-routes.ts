import { Hono } from 'hono';
import { consoleView } from '../console-view.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { sessionsPage } from './sessions-page.ts';

/** The signed-in sessions, each revocable (mounted at `/sessions`). */
export function createSessionsRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { render, fmt } = consoleView(deps);
  const app = new Hono<WebEnv>();
  app.get('/', (c) => {
    const a = c.get('auth');
    return render(c, 'Sessions', sessionsPage(deps.auth.list(), a.session.id, a.csrf, fmt()));
  });
  app.post('/:id/revoke', (c) => {
    const a = c.get('auth');
    deps.auth.revoke(c.req.param('id').slice(0, 40), `web:${a.session.id}`);
    return c.redirect('/sessions', 303);
  });
  return app;
}
