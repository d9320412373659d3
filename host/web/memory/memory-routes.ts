import { Hono, type Context } from 'hono';
import { consoleView } from '../console-view.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { memoryPage } from './memory-page.ts';

/**
 * Each group's memory for the owner (mounted at `/memory`): search it, read its notes, forget a note (its
 * file and its row) or a message (the history row, and with it the index entry). Every forget is audited
 * with the session that asked.
 */
export function createMemoryRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { store } = deps;
  const { render, fmt } = consoleView(deps);
  const show = (
    c: Context<WebEnv>,
    group: string | undefined,
    query: string,
    notice?: string,
    status: 200 | 400 | 404 = 200,
  ) => {
    const known = group && store.groups.get(group) ? group : undefined;
    return render(
      c,
      'Memory',
      memoryPage(
        {
          groups: store.groups.list(),
          group: known,
          query,
          hits: known && query ? store.memory.search(known, { text: query, limit: 50 }) : [],
          notes: known ? store.memory.notes(known) : [],
          csrf: c.get('auth').csrf,
          ...(notice ? { notice } : {}),
        },
        fmt(),
      ),
      status,
    );
  };

  const app = new Hono<WebEnv>();
  app.get('/', (c) => show(c, c.req.query('group'), (c.req.query('q') ?? '').slice(0, 500)));
  app.post('/:group/forget/:ref{(note|message):[0-9]+}', async (c) => {
    const group = c.req.param('group');
    const [kind, idText] = c.req.param('ref').split(':');
    const id = Number(idText);
    if (!store.groups.get(group)) return show(c, undefined, '', `There is no group ${group}.`, 404);
    const gone =
      kind === 'note'
        ? ((await deps.memoryNotes?.forget(group, id)) ?? false)
        : store.memory.forgetMessage(group, id);
    if (!gone) return show(c, group, '', `Group ${group} has no ${kind}:${id}.`, 404);
    store.audit.record({
      groupId: group,
      operation: 'memory.forget',
      decision: 'applied',
      approver: `web:${c.get('auth').session.id}`,
      reason: `${kind}:${id} forgotten from the web console`,
    });
    return show(c, group, '', `Forgot ${kind}:${id}.`);
  });
  return app;
}
