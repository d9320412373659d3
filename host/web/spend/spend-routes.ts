import { Hono } from 'hono';
import { consoleView } from '../console-view.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { spendPage } from './spend-page.ts';

/** The gateway's spend report: per run, per day against the cap (mounted at `/spend`). */
export function createSpendRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { render, fmt } = consoleView(deps);
  const app = new Hono<WebEnv>();
  app.get('/', (c) => render(c, 'Spend', spendPage(deps.spend(), fmt())));
  return app;
}
