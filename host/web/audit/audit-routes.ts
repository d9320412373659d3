import { Hono } from 'hono';
import { z } from 'zod';
import { describeZodIssues } from '../../../container-agent/src/rpc/zod-issues.ts';
import { consoleView } from '../console-view.ts';
import { wallTimeToUtc } from '../format.ts';
import { h } from '../html.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { auditPage } from './audit-page.ts';

const AUDIT_PAGE_ROWS = 1000;

const optionalText = z
  .string()
  .max(200)
  .transform((s) => s.trim() || undefined)
  .optional();
const instant = z
  .string()
  .max(40)
  .transform((s) => s.trim() || undefined)
  .refine((s) => s === undefined || wallTimeToUtc(s, 'UTC') !== undefined, {
    message: 'a time must look like 2026-11-27 or 2026-11-27T08:00',
  })
  .transform((s) => s?.replace(' ', 'T'))
  .optional();
const auditQuery = z.object({
  group: optionalText,
  kind: optionalText,
  decision: optionalText,
  since: instant,
  until: instant,
  before: z.coerce.number().int().positive().optional().catch(undefined),
});

/** The audit log, filtered and paged (mounted at `/audit`). */
export function createAuditRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { render, fmt } = consoleView(deps);
  const app = new Hono<WebEnv>();
  app.get('/', (c) => {
    const q = auditQuery.safeParse(c.req.query());
    if (!q.success) return render(c, 'Audit', h`<p class="notice">${describeZodIssues(q.error)}</p>`, 400);
    const f = {
      limit: AUDIT_PAGE_ROWS,
      ...(q.data.group ? { groupId: q.data.group } : {}),
      ...(q.data.kind ? { kind: q.data.kind } : {}),
      ...(q.data.decision ? { decision: q.data.decision } : {}),
      ...(q.data.since ? { since: q.data.since } : {}),
      ...(q.data.until ? { until: q.data.until } : {}),
      ...(q.data.before ? { beforeId: q.data.before } : {}),
    };
    // The owner types times as the page shows them, in their zone; the store compares UTC instants.
    const zone = deps.config().assistant.timezone;
    const utc = (t: string | undefined) => (t === undefined ? undefined : wallTimeToUtc(t, zone));
    const since = utc(f.since);
    const until = utc(f.until);
    const query = { ...f, ...(since ? { since } : {}), ...(until ? { until } : {}) };
    return render(c, 'Audit', auditPage(f, deps.store.consoleReads.auditPage(query), fmt()));
  });
  return app;
}
