import { Hono, type Context } from 'hono';
import { StaleConfigError } from '../../config/config-file-store.ts';
import { configHistory, lastConfigChange, planRollback } from '../../config/config-history.ts';
import { consoleView } from '../console-view.ts';
import { h } from '../html.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { configOffPage, configPage } from './config-page.ts';

type ConfigFiles = NonNullable<WebConsoleDeps['configFile']>;

/** config.toml's last change and history, and a rollback as `carapace config rollback` does it (mounted at `/config`). */
export function createConfigRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { render, fmt } = consoleView(deps);
  const show = (c: Context<WebEnv>, files: ConfigFiles, notice?: string) =>
    render(
      c,
      'Config',
      configPage(
        {
          file: files.store.configFile,
          last: lastConfigChange(files.store),
          history: configHistory(files.store),
          ...(notice === undefined ? {} : { notice }),
        },
        c.get('auth').csrf,
        fmt(),
      ),
    );

  const app = new Hono<WebEnv>();
  app.get('/', (c) => (deps.configFile ? show(c, deps.configFile) : render(c, 'Config', configOffPage())));
  app.post('/rollback/:n{[0-9]+}', async (c) => {
    const files = deps.configFile;
    if (!files) return render(c, 'Config', configOffPage(), 409);
    const n = Number(c.req.param('n'));
    const plan = planRollback(files.store, n);
    if (!plan.ok) return render(c, 'Config', h`<p class="notice" id="notice">${plan.message}</p>`, 409);
    try {
      files.store.write(plan.text, plan.baseHash);
    } catch (err) {
      if (err instanceof StaleConfigError)
        return render(c, 'Config', h`<p class="notice" id="notice">${err.message}</p>`, 409);
      throw err;
    }
    deps.store.audit.record({
      operation: 'config.rollback',
      decision: 'applied',
      approver: `web:${c.get('auth').session.id}`,
      reason: `backup ${n} put back from the web console`,
      details: { backup: n, baseHash: plan.baseHash, changes: plan.changes.map((ch) => ch.key) },
    });
    const outcome = await files.reload();
    return show(c, files, `Put back version ${n}. ${outcome.detail}`);
  });
  return app;
}
