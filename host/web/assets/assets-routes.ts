import { Hono } from 'hono';
import { CONSOLE_CSS, CONSOLE_JS } from './console-assets.ts';

/** The console's stylesheet and script (mounted at `/assets`); served without a session, like the sign-in page. */
export function createAssetsRoutes(): Hono {
  const app = new Hono();
  app.get('/console.css', (c) => c.body(CONSOLE_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8' }));
  app.get('/console.js', (c) =>
    c.body(CONSOLE_JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }),
  );
  return app;
}
