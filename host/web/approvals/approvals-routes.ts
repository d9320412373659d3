import { Hono } from 'hono';
import { z } from 'zod';
import { consoleView } from '../console-view.ts';
import { h } from '../html.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { approvalsList, approvalsPage } from './approvals-page.ts';

const DECIDED_SHOWN = 50;
const approvalAction = z.object({ id: z.string().min(1).max(40), action: z.enum(['approve', 'deny']) });

/** Pending and decided requests (mounted at `/approvals`); a decision is the approval service's `decide`. */
export function createApprovalsRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { store } = deps;
  const { render, fmt, now } = consoleView(deps);
  const pendingViews = (at: number) =>
    deps.approvals.pending().map((p) => ({
      id: p.id,
      groupId: p.groupId,
      text: deps.approvals.describe(p.id),
      paramsJson: store.approvals.get(p.id)?.paramsJson,
      expiresAt: at + p.expiresInMs,
    }));
  const fragment = (csrf: string) => {
    const at = now();
    return approvalsList(
      pendingViews(at),
      store.consoleReads.decidedApprovals(DECIDED_SHOWN),
      csrf,
      fmt(),
      at,
    );
  };

  const app = new Hono<WebEnv>();
  app.get('/', (c) => {
    const decided = c.req.query('decided');
    const row = decided === undefined ? undefined : store.approvals.get(decided);
    const notice = row ? `Request ${row.id} is ${row.status} (by ${row.decidedBy ?? 'nobody'}).` : undefined;
    return render(c, 'Approvals', approvalsPage(fragment(c.get('auth').csrf), notice));
  });
  app.get('/list', (c) => c.html(fragment(c.get('auth').csrf)));
  app.post('/:id/:action', (c) => {
    const parsed = approvalAction.safeParse(c.req.param());
    if (!parsed.success) return render(c, 'Approvals', h`<p>Unknown action.</p>`, 404);
    const { id, action } = parsed.data;
    const who = c.get('auth').session;
    // The same service, rules and audit as "approve <id>" in the admin chat; the decider is this session.
    const result = deps.approvals.decide(id, action, `web:${who.id}`, 'the web console');
    if (!result.ok)
      return render(c, 'Approvals', h`<p class="notice" id="notice">${result.message}</p>`, 409);
    deps.notifyOwner(`decided:web:${id}`, `Decided in the web console: ${result.message}`);
    return c.redirect(`/approvals?decided=${encodeURIComponent(id)}`, 303);
  });
  return app;
}
