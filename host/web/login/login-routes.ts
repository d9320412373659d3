import { Hono } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { consoleView } from '../console-view.ts';
import { SESSION_COOKIE, type WebConsoleDeps, type WebEnv } from '../web-console-deps.ts';
import { loginPage, loginRefusedPage } from './login-page.ts';

/**
 * Sign-in (mounted at `/login`, before the session guard): the link's page shows a button, and only its
 * POST spends the link, so a chat app's link preview does not.
 */
export function createLoginRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { render } = consoleView(deps);
  const app = new Hono<WebEnv>();
  app.get('/', (c) => render(c, 'Sign in', loginPage(c.req.query('token'))));
  app.post('/', async (c) => {
    const form = await c.req.parseBody();
    const token = typeof form.token === 'string' ? form.token : undefined;
    const signed = deps.auth.signIn(token, c.req.header('user-agent') ?? '');
    if (!signed) return render(c, 'Sign in', loginRefusedPage(), 403);
    setCookie(c, SESSION_COOKIE, signed.cookieToken, {
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
      secure: deps.secureCookie,
      expires: new Date(signed.session.expiresAt),
    });
    return c.redirect('/approvals', 303);
  });
  return app;
}

/** Sign-out (mounted at `/logout`, behind the session and CSRF guards): this session revoked, its cookie gone. */
export function createLogoutRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const app = new Hono<WebEnv>();
  app.post('/', (c) => {
    const a = c.get('auth');
    deps.auth.revoke(a.session.id, `web:${a.session.id}`);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/login', 303);
  });
  return app;
}
