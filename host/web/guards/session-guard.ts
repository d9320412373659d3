import type { MiddlewareHandler } from 'hono';
import { getCookie } from 'hono/cookie';
import type { ConsoleView } from '../console-view.ts';
import { loginPage } from '../login/login-page.ts';
import { SESSION_COOKIE, type WebEnv } from '../web-console-deps.ts';
import type { WebAuth } from '../web-auth.ts';

/** A live session, or the sign-in page (401) and nothing else; the session is set for the routes after it. */
export function sessionGuard(
  auth: Pick<WebAuth, 'authenticate'>,
  view: ConsoleView,
): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    const session = auth.authenticate(getCookie(c, SESSION_COOKIE));
    if (!session) return view.render(c, 'Sign in', loginPage(undefined), 401);
    c.set('auth', session);
    await next();
  };
}
