import { Hono } from 'hono';
import { consoleView } from '../console-view.ts';
import { h } from '../html.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { runsList, runsPage, runTimelinePage } from './runs-page.ts';

const RECENT_RUNS = 50;

/** The queue and recent runs, and one run's timeline (mounted at `/runs`). */
export function createRunsRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { store } = deps;
  const { render, fmt } = consoleView(deps);
  const fragment = () => runsList(deps.queue(), store.runs.recent(RECENT_RUNS), fmt());
  const app = new Hono<WebEnv>();
  app.get('/', (c) => render(c, 'Runs', runsPage(fragment())));
  app.get('/list', (c) => c.html(fragment()));
  app.get('/:id{[0-9]+}', (c) => {
    const id = Number(c.req.param('id'));
    const run = store.runs.get(id);
    if (!run) return render(c, 'Run', h`<p>No run has the id ${id}.</p>`, 404);
    return render(c, `Run ${id}`, runTimelinePage(run, store.consoleReads.runTimeline(run), fmt()));
  });
  return app;
}
