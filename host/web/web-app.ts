import crypto from 'node:crypto';
import { Hono, type Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { streamSSE } from 'hono/streaming';
import type { Logger } from '../logging/logger.ts';
import { z } from 'zod';
import type { ApprovalService } from '../admin/approval-service.ts';
import { RegistrationRefused, type GroupRegistration } from '../admin/register-group.ts';
import type { GroupRecord } from '../store/groups-store.ts';
import type { HostStatus } from '../channels/local/local-api.ts';
import { StaleConfigError, type ConfigFileStore } from '../config/config-file-store.ts';
import { configHistory, lastConfigChange, planRollback } from '../config/config-history.ts';
import type { HostConfig } from '../config/schema.ts';
import type { SpendReport } from '../gateway/spend/spend-report.ts';
import type { HostEvents } from '../store/host-events.ts';
import type { Store } from '../store/store.ts';
import type { AdminConversation } from '../channels/local/local-channel.ts';
import type { Clock } from '../time/clock.ts';
import { CONSOLE_CSS, CONSOLE_JS } from './assets.ts';
import { createConsoleFormat, wallTimeToUtc, type ConsoleFormat } from './format.ts';
import { h, layout, type Html } from './html.ts';
import { approvalsList, approvalsPage } from './pages/approvals-page.ts';
import { auditPage } from './pages/audit-page.ts';
import { configOffPage, configPage } from './pages/config-page.ts';
import { groupsPage } from './pages/groups-page.ts';
import { healthPage, type DoctorResult } from './pages/health-page.ts';
import { loginPage, loginRefusedPage } from './pages/login-page.ts';
import { messagePage, repliesList } from './pages/message-page.ts';
import { runsList, runsPage, runTimelinePage, type QueueView } from './pages/runs-page.ts';
import { sessionsPage } from './pages/sessions-page.ts';
import { spendPage } from './pages/spend-page.ts';
import type { Authenticated, WebAuth } from './web-auth.ts';

export const SESSION_COOKIE = 'carapace_session';

/**
 * Nothing but this host's own files; no inline script or style, no frames, forms only to this host. A page
 * that somehow carried injected markup still could not run it or send anything elsewhere.
 */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export interface WebConsoleDeps {
  auth: WebAuth;
  approvals: Pick<ApprovalService, 'decide' | 'describe' | 'pending'>;
  store: Pick<Store, 'consoleReads' | 'runs' | 'groups' | 'chatsSeen' | 'approvals' | 'audit'>;
  events: Pick<HostEvents, 'on' | 'off'>;
  queue(): QueueView;
  status(): HostStatus;
  config(): HostConfig;
  spend(): SpendReport;
  /**
   * config.toml and the running host's reload, when the host runs on the file (absent: the Config page
   * says so). A rollback here is `carapace config rollback`'s: the same plan, write and reload.
   */
  configFile?: {
    store: ConfigFileStore;
    reload(): Promise<{ ok: boolean; detail: string }>;
  };
  /** `carapace doctor`'s checks, run when the Health page asks (absent: the host was not started by the CLI). */
  doctor?(): Promise<DoctorResult[]>;
  /** `carapace groups add`'s registration, then the running host told (`registerGroup` plus a refresh). */
  registerGroup(r: GroupRegistration): GroupRecord;
  /**
   * The local console's admin group (`carapace send main`): the Message page sends the owner's words
   * through its path and shows what the host delivered there after them. Absent: no Message page.
   */
  adminChat?: AdminConversation;
  /** Now, for relative times and an approval's time left (default: the system clock). */
  clock?: Pick<Clock, 'now'>;
  /** Tells the admin chats (a decision taken here is confirmed there). */
  notifyOwner(key: string, text: string): void;
  /** `host:port` values a request's Host (and a POST's Origin) may name: a rebound DNS name gets nothing. */
  allowedHosts: ReadonlySet<string>;
  /** Mark the cookie Secure (the console is reached over https through a proxy). */
  secureCookie: boolean;
  logger: Logger;
  /** A comment line on open event streams, so proxies keep them (default 25 s). */
  heartbeatMs?: number;
}

type Env = { Variables: { auth: Authenticated } };

const AUDIT_PAGE_ROWS = 1000;
const DECIDED_SHOWN = 50;
const RECENT_RUNS = 50;
const COALESCE_MS = 100;

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
const registerForm = z.object({
  id: z.string().trim().min(1).max(64),
  channel: z.string().min(1).max(40),
  chat: z.string().min(1).max(200),
});
const approvalAction = z.object({ id: z.string().min(1).max(40), action: z.enum(['approve', 'deny']) });
const messageForm = z.object({
  text: z
    .string()
    .trim()
    .min(1, 'the message is empty')
    .max(32_000, 'the message is longer than 32000 characters'),
  // Drawn when the form was rendered: sending the same form twice (a reload, a double tap) stores it once.
  clientMessageId: z.string().regex(/^web-[A-Za-z0-9_-]{16,40}$/),
});
const repliesQuery = z.object({ after: z.coerce.number().int().min(0) });
const REPLIES_SHOWN = 50;

/** The console as a Hono app: every route but the sign-in and the assets needs a live session. */
export function createWebApp(deps: WebConsoleDeps): Hono<Env> {
  const { auth, store } = deps;
  const now = () => (deps.clock ?? Date).now();
  const app = new Hono<Env>();
  // Read at each request: a reloaded [assistant] timezone applies to the next page.
  const fmt = (): ConsoleFormat => createConsoleFormat({ timeZone: deps.config().assistant.timezone, now });
  const render = (
    c: Context<Env>,
    title: string,
    body: Html,
    status: 200 | 400 | 401 | 403 | 404 | 409 | 503 = 200,
  ) => {
    const csrf = c.get('auth')?.csrf;
    return c.html(
      layout({
        title,
        path: c.req.path,
        body,
        ...(csrf ? { csrf, timeZone: deps.config().assistant.timezone } : {}),
      }),
      status,
    );
  };

  app.onError((err, c) => {
    deps.logger.error({ err, path: c.req.path }, 'web console request failed');
    return c.text('The console could not answer this request; the host log has the reason.', 500);
  });

  app.use(async (c, next) => {
    // Fail closed on a Host we do not serve: a DNS name rebound to 127.0.0.1 reaches nothing.
    const host = c.req.header('host') ?? '';
    if (!deps.allowedHosts.has(host.toLowerCase())) return c.text('Unknown host name.', 421);
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const origin = c.req.header('origin');
      if (origin !== undefined && !deps.allowedHosts.has(hostOf(origin)))
        return c.text('Cross-site request refused.', 403);
    }
    await next();
    c.header('Content-Security-Policy', CONTENT_SECURITY_POLICY);
    c.header('X-Content-Type-Options', 'nosniff');
    // A login link's token must not leave in a Referer header. Not `no-referrer`: with it Chromium sends
    // `Origin: null` on this host's own forms, and the check above would refuse them.
    c.header('Referrer-Policy', 'same-origin');
    c.header('X-Frame-Options', 'DENY');
    c.header('Cache-Control', 'no-store');
  });

  app.get('/assets/console.css', (c) =>
    c.body(CONSOLE_CSS, 200, { 'Content-Type': 'text/css; charset=utf-8' }),
  );
  app.get('/assets/console.js', (c) =>
    c.body(CONSOLE_JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8' }),
  );

  app.get('/favicon.ico', (c) => c.body(null, 204));
  app.get('/login', (c) => render(c, 'Sign in', loginPage(c.req.query('token'))));
  app.post('/login', async (c) => {
    const form = await c.req.parseBody();
    const token = typeof form.token === 'string' ? form.token : undefined;
    const signed = auth.signIn(token, c.req.header('user-agent') ?? '');
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

  // Every route below: a live session, and for a state change its CSRF token.
  app.use(async (c, next) => {
    const session = auth.authenticate(getCookie(c, SESSION_COOKIE));
    if (!session) return render(c, 'Sign in', loginPage(undefined), 401);
    c.set('auth', session);
    // Anything but a read needs the token, whatever its method: a route added later is covered too.
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      const header = c.req.header('x-csrf-token');
      const form = header === undefined ? await c.req.parseBody() : {};
      if (!auth.csrfMatches(session, header ?? form._csrf))
        return render(
          c,
          'Refused',
          h`<p id="csrf-refused">This form is stale or came from another site: nothing changed. Reload the page and try again.</p>`,
          403,
        );
    }
    await next();
  });

  app.get('/', (c) => c.redirect('/approvals', 303));

  const pendingViews = (at: number) =>
    deps.approvals.pending().map((p) => ({
      id: p.id,
      groupId: p.groupId,
      text: deps.approvals.describe(p.id),
      paramsJson: store.approvals.get(p.id)?.paramsJson,
      expiresAt: at + p.expiresInMs,
    }));
  const approvalsFragment = (csrf: string) => {
    const at = now();
    return approvalsList(
      pendingViews(at),
      store.consoleReads.decidedApprovals(DECIDED_SHOWN),
      csrf,
      fmt(),
      at,
    );
  };

  app.get('/approvals', (c) => {
    const decided = c.req.query('decided');
    const row = decided === undefined ? undefined : store.approvals.get(decided);
    const notice = row ? `Request ${row.id} is ${row.status} (by ${row.decidedBy ?? 'nobody'}).` : undefined;
    return render(c, 'Approvals', approvalsPage(approvalsFragment(c.get('auth').csrf), notice));
  });
  app.get('/approvals/list', (c) => c.html(approvalsFragment(c.get('auth').csrf)));
  app.post('/approvals/:id/:action', (c) => {
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

  const runsFragment = () => runsList(deps.queue(), store.runs.recent(RECENT_RUNS), fmt());
  app.get('/runs', (c) => render(c, 'Runs', runsPage(runsFragment())));
  app.get('/runs/list', (c) => c.html(runsFragment()));
  app.get('/runs/:id{[0-9]+}', (c) => {
    const id = Number(c.req.param('id'));
    const run = store.runs.get(id);
    if (!run) return render(c, 'Run', h`<p>No run has the id ${id}.</p>`, 404);
    return render(c, `Run ${id}`, runTimelinePage(run, store.consoleReads.runTimeline(run), fmt()));
  });

  app.get('/audit', (c) => {
    const q = auditQuery.safeParse(c.req.query());
    if (!q.success)
      return render(
        c,
        'Audit',
        h`<p class="notice">${q.error.issues.map((i) => i.message).join('; ')}</p>`,
        400,
      );
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
    return render(c, 'Audit', auditPage(f, store.consoleReads.auditPage(query), fmt()));
  });

  app.get('/spend', (c) => render(c, 'Spend', spendPage(deps.spend(), fmt())));
  const showGroups = (c: Context<Env>, notice?: string, status: 200 | 400 = 200) =>
    render(
      c,
      'Groups and chats',
      groupsPage(
        store.groups.list(),
        deps.config(),
        store.chatsSeen.list().filter((s) => !store.groups.findByChat(s.channel, s.chatId)),
        c.get('auth').csrf,
        fmt(),
        notice,
      ),
      status,
    );
  app.get('/groups', (c) => showGroups(c));
  app.post('/groups/register', async (c) => {
    const form = registerForm.safeParse(await c.req.parseBody());
    if (!form.success) return showGroups(c, 'A group needs an id, a channel and a chat.', 400);
    const who = `web:${c.get('auth').session.id}`;
    try {
      const g = deps.registerGroup({ id: form.data.id, channel: form.data.channel, chatId: form.data.chat });
      store.audit.record({
        groupId: g.id,
        operation: 'groups.add',
        decision: 'applied',
        approver: who,
        reason: 'registered from the web console',
        details: { channel: g.channel, chatId: g.chatId },
      });
      return showGroups(c, `Registered ${g.id} (${g.channel}:${g.chatId}, network ${g.networkMode}).`);
    } catch (err) {
      if (err instanceof RegistrationRefused) return showGroups(c, `Not registered: ${err.message}`, 400);
      throw err;
    }
  });
  app.get('/health', async (c) => {
    // The doctor starts MCP servers and asks Docker: only when asked for, never on every view.
    const checks = c.req.query('doctor') === '1' && deps.doctor ? await deps.doctor() : undefined;
    return render(c, 'Health', healthPage(deps.status(), checks, deps.doctor !== undefined, fmt()));
  });

  const showConfig = (c: Context<Env>, files: NonNullable<WebConsoleDeps['configFile']>, notice?: string) =>
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
  app.get('/config', (c) =>
    deps.configFile ? showConfig(c, deps.configFile) : render(c, 'Config', configOffPage()),
  );
  app.post('/config/rollback/:n{[0-9]+}', async (c) => {
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
    const who = `web:${c.get('auth').session.id}`;
    store.audit.record({
      operation: 'config.rollback',
      decision: 'applied',
      approver: who,
      reason: `backup ${n} put back from the web console`,
      details: { backup: n, baseHash: plan.baseHash, changes: plan.changes.map((ch) => ch.key) },
    });
    const outcome = await files.reload();
    return showConfig(c, files, `Put back version ${n}. ${outcome.detail}`);
  });

  const chat = deps.adminChat;
  const showMessage = (
    c: Context<Env>,
    p: { notice?: string; after?: number; text?: string },
    status: 200 | 400 | 404 | 503 = 200,
  ) =>
    render(
      c,
      'Message',
      messagePage({
        csrf: c.get('auth').csrf,
        groupId: chat?.groupId(),
        clientMessageId: `web-${crypto.randomBytes(18).toString('base64url')}`,
        ...p,
        ...(p.after === undefined || !chat
          ? {}
          : { replies: repliesList(chat.repliesAfter(p.after, REPLIES_SHOWN)) }),
      }),
      status,
    );
  app.get('/message', (c) => {
    const q = repliesQuery.safeParse(c.req.query());
    return showMessage(c, q.success ? { after: q.data.after } : {});
  });
  app.get('/message/replies', (c) => {
    const q = repliesQuery.safeParse(c.req.query());
    if (!q.success || !chat) return c.html(repliesList([]), 400);
    return c.html(repliesList(chat.repliesAfter(q.data.after, REPLIES_SHOWN)));
  });
  app.post('/message', async (c) => {
    if (!chat) return showMessage(c, { notice: 'This host has no local console admin group.' }, 404);
    const body = await c.req.parseBody();
    const form = messageForm.safeParse(body);
    if (!form.success)
      return showMessage(
        c,
        {
          notice: `Not sent: ${form.error.issues.map((i) => i.message).join('; ')}.`,
          ...(typeof body.text === 'string' ? { text: body.text.slice(0, 32_000) } : {}),
        },
        400,
      );
    const who = `web:${c.get('auth').session.id}`;
    // The console channel's own path for the owner's words, as `carapace send` takes.
    const sent = chat.send(form.data.text, form.data.clientMessageId);
    if (!sent.ok)
      return showMessage(c, { notice: `Not sent: ${sent.error}.`, text: form.data.text }, sent.status);
    store.audit.record({
      groupId: sent.groupId,
      operation: 'web.message',
      decision: sent.duplicate ? 'duplicate' : 'sent',
      approver: who,
      reason: 'the owner wrote to the admin group from the web console',
      details: {
        messageId: sent.messageId,
        chars: form.data.text.length,
        triggered: sent.triggered,
        command: sent.commandReplyKey !== null,
      },
    });
    // After a POST, a GET: a reload does not ask to send again, and the page follows the answers.
    return c.redirect(`/message?after=${sent.after}`, 303);
  });

  app.get('/sessions', (c) => {
    const a = c.get('auth');
    return render(c, 'Sessions', sessionsPage(auth.list(), a.session.id, a.csrf, fmt()));
  });
  app.post('/sessions/:id/revoke', (c) => {
    const a = c.get('auth');
    auth.revoke(c.req.param('id').slice(0, 40), `web:${a.session.id}`);
    return c.redirect('/sessions', 303);
  });
  app.post('/logout', (c) => {
    const a = c.get('auth');
    auth.revoke(a.session.id, `web:${a.session.id}`);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    return c.redirect('/login', 303);
  });

  app.get('/events', (c) => {
    const cookie = getCookie(c, SESSION_COOKIE);
    return streamSSE(c, async (stream) => {
      // Bursts (a run's several group-state events) collapse into one message per kind per 100 ms, so an
      // open page adds one fetch per burst, not one per event, to the host's work.
      const due = new Set<string>();
      let timer: NodeJS.Timeout | undefined;
      const flush = () => {
        timer = undefined;
        // Every message re-checks the session: a revoked or expired one gets no more news.
        if (!auth.authenticate(cookie)) {
          void stream.writeSSE({ event: 'bye', data: 'signed out' }).then(() => stream.abort());
          return;
        }
        for (const event of due) void stream.writeSSE({ event, data: String(Date.now()) });
        due.clear();
      };
      const push = (event: string) => {
        due.add(event);
        timer ??= setTimeout(() => {
          try {
            flush();
          } catch (err) {
            deps.logger.error({ err }, 'a live update could not be sent');
          }
        }, COALESCE_MS).unref();
      };
      const onApproval = () => push('approvals');
      const onGroup = () => push('runs');
      const onDelivered = () => push('chat');
      deps.events.on('approval-changed', onApproval);
      deps.events.on('group-state', onGroup);
      deps.events.on('outbox-delivered', onDelivered);
      const beat = setInterval(() => void stream.write(': keep-alive\n\n'), deps.heartbeatMs ?? 25_000);
      beat.unref();
      await new Promise<void>((resolve) => stream.onAbort(resolve));
      // Nothing of a closed stream may run later (on a stopping host, after the database closed).
      clearTimeout(timer);
      clearInterval(beat);
      deps.events.off('approval-changed', onApproval);
      deps.events.off('group-state', onGroup);
      deps.events.off('outbox-delivered', onDelivered);
    });
  });

  app.notFound((c) => render(c, 'Not found', h`<p>Nothing here.</p>`, 404));
  return app;
}

/** `host:port` of an Origin header ("http://127.0.0.1:8750"); empty for anything unparsable (refused). */
function hostOf(origin: string): string {
  try {
    return new URL(origin).host.toLowerCase();
  } catch {
    return '';
  }
}
