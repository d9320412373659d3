import type { MiddlewareHandler } from 'hono';
import type { ConsoleView } from '../console-view.ts';
import { h } from '../html.ts';
import type { WebEnv } from '../web-console-deps.ts';
import type { WebAuth } from '../web-auth.ts';

/**
 * Anything but a read carries the session's CSRF token (the `X-CSRF-Token` header or a form's `_csrf`),
 * whatever its method: a route added later is covered too. Runs after the session guard.
 */
export function csrfGuard(auth: Pick<WebAuth, 'csrfMatches'>, view: ConsoleView): MiddlewareHandler<WebEnv> {
  return async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const header = c.req.header('x-csrf-token');
      const form = header === undefined ? await c.req.parseBody() : {};
      if (!auth.csrfMatches(c.get('auth'), header ?? form._csrf))
        return view.render(
          c,
          'Refused',
          h`<p id="csrf-refused">This form is stale or came from another site: nothing changed. Reload the page and try again.</p>`,
          403,
        );
    }
    await next();
  };
}
