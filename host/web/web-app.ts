import { Hono } from 'hono';
import { createApprovalsRoutes } from './approvals/approvals-routes.ts';
import { createAssetsRoutes } from './assets/assets-routes.ts';
import { createAuditRoutes } from './audit/audit-routes.ts';
import { createConfigRoutes } from './config/config-routes.ts';
import { consoleView } from './console-view.ts';
import { createEventsRoutes } from './events/events-routes.ts';
import { createGroupsRoutes } from './groups/groups-routes.ts';
import { createMemoryRoutes } from './memory/memory-routes.ts';
import { csrfGuard } from './guards/csrf-guard.ts';
import { hostOriginGuard } from './guards/host-origin-guard.ts';
import { consoleSecurityHeaders } from './guards/security-headers.ts';
import { sessionGuard } from './guards/session-guard.ts';
import { createHealthRoutes } from './health/health-routes.ts';
import { h } from './html.ts';
import { createLoginRoutes, createLogoutRoutes } from './login/login-routes.ts';
import { createMessageRoutes } from './message/message-routes.ts';
import { createRunsRoutes } from './runs/runs-routes.ts';
import { createSessionsRoutes } from './sessions/sessions-routes.ts';
import { createSpendRoutes } from './spend/spend-routes.ts';
import type { WebConsoleDeps, WebEnv } from './web-console-deps.ts';

/**
 * The console as a Hono app, composed: the guards every request passes, then each resource's sub-app at its
 * path. Everything mounted after the session guard needs a live session, and anything but a read its CSRF
 * token, so a resource added later is covered without a line of its own.
 */
export function createWebApp(deps: WebConsoleDeps): Hono<WebEnv> {
  const view = consoleView(deps);
  const app = new Hono<WebEnv>();
  app.onError((err, c) => {
    deps.logger.error({ err, path: c.req.path }, 'web console request failed');
    return c.text('The console could not answer this request; the host log has the reason.', 500);
  });

  app.use(consoleSecurityHeaders());
  app.use(hostOriginGuard(deps.allowedHosts));

  // Without a session: the files every page loads, and the sign-in.
  app.route('/assets', createAssetsRoutes());
  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.route('/login', createLoginRoutes(deps));

  app.use(sessionGuard(deps.auth, view));
  app.use(csrfGuard(deps.auth, view));

  app.get('/', (c) => c.redirect('/approvals', 303));
  app.route('/approvals', createApprovalsRoutes(deps));
  app.route('/runs', createRunsRoutes(deps));
  app.route('/audit', createAuditRoutes(deps));
  app.route('/spend', createSpendRoutes(deps));
  app.route('/groups', createGroupsRoutes(deps));
  app.route('/memory', createMemoryRoutes(deps));
  app.route('/health', createHealthRoutes(deps));
  app.route('/config', createConfigRoutes(deps));
  app.route('/message', createMessageRoutes(deps));
  app.route('/sessions', createSessionsRoutes(deps));
  app.route('/logout', createLogoutRoutes(deps));
  app.route('/events', createEventsRoutes(deps));

  app.notFound((c) => view.render(c, 'Not found', h`<p>Nothing here.</p>`, 404));
  return app;
}
