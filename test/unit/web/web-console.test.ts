import fs from 'node:fs';
import path from 'node:path';
import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createApprovalService, type ApprovalResult } from '../../../host/admin/approval-service.ts';
import { registerGroup } from '../../../host/admin/register-group.ts';
import { ALWAYS_ON_CHANNELS, CHANNEL_DEFINITIONS } from '../../../host/channels/channel-definitions.ts';
import { createChannelRegistry } from '../../../host/channels/registry.ts';
import { createConfigFileStore } from '../../../host/config/config-file-store.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import { hostStatus } from '../../../host/channels/local/local-api.ts';
import { createSpendReporter } from '../../../host/gateway/spend/spend-report.ts';
import type { HostEventMap } from '../../../host/router/host-events.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { createWebApp } from '../../../host/web/web-app.ts';
import { SESSION_COOKIE } from '../../../host/web/web-console-deps.ts';
import { createWebAuth, type WebAuth } from '../../../host/web/web-auth.ts';
import { systemClock } from '../../../host/time/clock.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

const HOST = '127.0.0.1:8750';
/** The console's policy, written out: a change to the middleware's directives must show up here. */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
const silent = pino({ level: 'silent' });

interface Harness {
  dir: string;
  store: Store;
  auth: WebAuth;
  app: ReturnType<typeof createWebApp>;
  now: { t: number };
  timers: FakeClock;
  told: string[];
  configFile: string;
  reloads: number;
  events: EventEmitter<HostEventMap>;
  ask(r?: {
    operation: string;
    reason: string;
    params: Record<string, unknown>;
  }): Promise<{ id: string; result: Promise<ApprovalResult> }>;
  close(): void;
}

function harness(): Harness {
  const dir = makeTempDir();
  // One time for the whole harness: `now.t` moves it (timers not fired); `timers.advance` fires the console's.
  const timers = fakeClock(Date.parse('2026-11-27T08:00:00Z'));
  const now = {
    get t() {
      return timers.now();
    },
    set t(v: number) {
      timers.jumpTo(v);
    },
  };
  const store = openStore({ file: path.join(dir, 'carapace.db'), now: () => new Date(now.t) });
  store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'main', isAdmin: true });
  store.groups.add({ id: 'alpha', channel: 'local', chatId: 'alpha', name: 'alpha', isAdmin: false });
  const events = new EventEmitter<HostEventMap>();
  const shown: string[] = [];
  // Resolved by the next text the admin chat is shown: a request is asked once its text has gone out.
  let nextShown: (text: string) => void = () => {};
  const approvals = createApprovalService({
    store,
    // The test's now, so a request's time left is exact; its expiry timer stays a real (unref'd) one.
    clock: { now: () => now.t, setTimer: systemClock.setTimer },
    redact: (s) => s,
    logger: silent,
    notifyAdmin: async (text) => {
      shown.push(text);
      nextShown(text);
    },
    onChange: (id) => events.emit('approval-changed', id),
  });
  const auth = createWebAuth({
    sessions: store.webSessions,
    audit: store.audit,
    clock: { now: () => now.t },
    linkTtlMs: 600_000,
    sessionTtlMs: 86_400_000,
  });
  const told: string[] = [];
  // Times are shown in the owner's zone: Berlin is UTC+1 in November.
  const config = hostConfigSchema.parse({ assistant: { timezone: 'Europe/Berlin' } });
  const configFile = path.join(dir, 'config.toml');
  fs.writeFileSync(configFile, '[assistant]\nname = "Andy"\n');
  const files = createConfigFileStore({ configFile });
  let reloads = 0;
  const spend = createSpendReporter(store.db);
  const app = createWebApp({
    auth,
    approvals,
    store,
    events,
    queue: () => ({ active: [], waiting: [], retrying: [] }),
    status: () =>
      hostStatus.parse({
        pid: 1,
        startedAt: '2026-11-27T08:00:00.000Z',
        assistant: 'Andy',
        queue: { active: [], waiting: [], retrying: [] },
        outboxPending: 0,
        approvalsPending: 0,
        groups: [],
        credentials: [
          {
            name: 'github',
            kind: 'git',
            upstream: 'https://github.com',
            value: 'set',
            groups: ['alpha'],
            last: null,
          },
        ],
        channels: [
          { name: 'local', state: 'connected', since: '2026-11-27T08:00:00.000Z', adminChat: 'main' },
        ],
      }),
    doctor: async () => [
      { name: 'docker', ok: true, detail: 'Docker 27 answers' },
      { name: 'agent image', ok: false, detail: 'not built yet', fix: 'carapace image build' },
    ],
    config: () => config,
    spend: () => spend({ today: '2026-11-27', groups: ['main', 'alpha'] }, config.gateway),
    notifyOwner: (_key, text) => told.push(text),
    registerGroup: (r) =>
      registerGroup(
        {
          store,
          registry: createChannelRegistry({
            definitions: CHANNEL_DEFINITIONS,
            config: () => config.channels,
            alwaysOn: ALWAYS_ON_CHANNELS,
            dataDirOf: (name) => path.join(dir, name),
          }),
        },
        r,
      ),
    configFile: {
      store: files,
      reload: async () => {
        reloads += 1;
        return { ok: true, detail: 'applied to the running host, no restart needed' };
      },
    },
    clock: timers.clock,
    allowedHosts: new Set([HOST]),
    secureCookie: false,
    logger: silent,
  });
  return {
    dir,
    store,
    auth,
    app,
    now,
    timers,
    told,
    configFile,
    events,
    get reloads() {
      return reloads;
    },
    async ask(
      r = {
        operation: 'bash',
        reason: 'the agent wants to run it',
        params: { command: 'touch /workspace/group/x' },
      },
    ) {
      const told = new Promise<string>((resolve) => (nextShown = resolve));
      const result = approvals.request({ runId: 7, groupId: 'alpha', ...r });
      const text = await told;
      const id = /Approval needed: (\S+)/.exec(text)?.[1] ?? '';
      return { id, result };
    },
    close() {
      approvals.close();
      store.close();
      removeTempDir(dir);
    },
  };
}

let t: Harness;
beforeEach(() => {
  t = harness();
});
afterEach(() => t.close());

const req = (
  p: string,
  init: {
    method?: string;
    cookie?: string;
    form?: Record<string, string>;
    headers?: Record<string, string>;
  } = {},
) =>
  t.app.request(`http://${HOST}${p}`, {
    method: init.method ?? (init.form ? 'POST' : 'GET'),
    headers: {
      host: HOST,
      ...(init.cookie ? { cookie: `${SESSION_COOKIE}=${init.cookie}` } : {}),
      ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      ...init.headers,
    },
    ...(init.form ? { body: new URLSearchParams(init.form).toString() } : {}),
  });

/** Signs in through the login form; returns the cookie value and the CSRF token of its pages. */
async function signIn(): Promise<{ cookie: string; csrf: string }> {
  const { token } = t.auth.issueLink('cli');
  const res = await req('/login', { form: { token } });
  expect(res.status).toBe(303);
  const cookie = /carapace_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1] ?? '';
  const page = await (await req('/approvals', { cookie })).text();
  const csrf = /<meta name="csrf" content="([^"]+)"/.exec(page)?.[1] ?? '';
  return { cookie, csrf };
}

describe('web console sign-in', () => {
  it('exchanges a one-time link for an HttpOnly, SameSite=Strict session cookie, and the link works only once', async () => {
    const { token } = t.auth.issueLink('cli');
    const form = await req(`/login?token=${token}`);
    // Opening the link only shows a button: a preview fetch does not spend it.
    expect(await form.text()).toContain('Sign in to this console');
    const first = await req('/login', { form: { token } });
    expect(first.status).toBe(303);
    const cookie = first.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^carapace_session=[A-Za-z0-9_-]{43};/);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    const second = await req('/login', { form: { token } });
    expect(second.status).toBe(403);
    expect(second.headers.get('set-cookie')).toBeNull();
    expect(await second.text()).toContain('unknown, already used or expired');
  });

  it('refuses a link after it expired', async () => {
    const { token } = t.auth.issueLink('cli');
    t.now.t += 600_001;
    expect((await req('/login', { form: { token } })).status).toBe(403);
  });

  it('writes refused sign-ins as at most two audit rows a minute, with every refusal counted, and still refuses them', async () => {
    const refusedRows = () =>
      t.store.audit
        .tail(1000)
        .filter((r) => r.operation === 'web.session' && r.decision === 'sign-in-refused');
    const wrong = 'w'.repeat(43);
    for (let i = 0; i < 50; i++) expect((await req('/login', { form: { token: wrong } })).status).toBe(403);
    expect(refusedRows()).toHaveLength(1);
    t.now.t += 60_000;
    expect((await req('/login', { form: { token: wrong } })).status).toBe(403);
    const rows = refusedRows();
    expect(rows).toHaveLength(3);
    expect(JSON.parse(rows[1]?.details ?? '{}')).toEqual({ count: 49, minute: '2026-11-27T08:00:00.000Z' });
    // The last minute's count is not lost: a sign-in (or the console closing) writes it.
    await req('/login', { form: { token: wrong } });
    await signIn();
    expect(JSON.parse(refusedRows()[3]?.details ?? '{}')).toEqual({
      count: 1,
      minute: '2026-11-27T08:01:00.000Z',
    });
    t.auth.flushRefused();
    expect(refusedRows()).toHaveLength(4);
  });

  it('stores only hashes of links and session secrets', async () => {
    const { token } = t.auth.issueLink('cli');
    const { cookie } = await signIn();
    const dump = JSON.stringify([
      t.store.db.prepare('SELECT * FROM web_login_links').all(),
      t.store.db.prepare('SELECT * FROM web_sessions').all(),
    ]);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(cookie);
  });

  it('answers a request without the cookie, or with an unknown one, with the sign-in page and nothing else', async () => {
    await t.ask();
    for (const cookie of [undefined, 'x'.repeat(43)]) {
      const res = await req('/approvals', cookie ? { cookie } : {});
      expect(res.status).toBe(401);
      const body = await res.text();
      expect(body).toContain('You are not signed in');
      expect(body).not.toContain('Approval needed');
    }
    expect((await req('/events')).status).toBe(401);
  });

  it('a revoked session is signed out at once', async () => {
    const { cookie, csrf } = await signIn();
    const [session] = t.auth.list();
    const revoked = await req(`/sessions/${session?.id}/revoke`, { cookie, form: { _csrf: csrf } });
    expect(revoked.status).toBe(303);
    expect((await req('/approvals', { cookie })).status).toBe(401);
    expect(t.auth.list()).toEqual([]);
  });

  it('refuses a Host it does not serve (DNS rebinding) and a POST from another origin', async () => {
    const { cookie, csrf } = await signIn();
    const rebound = await t.app.request(`http://evil.example:8750/approvals`, {
      headers: { host: 'evil.example:8750', cookie: `${SESSION_COOKIE}=${cookie}` },
    });
    expect(rebound.status).toBe(421);
    const cross = await req('/logout', {
      cookie,
      form: { _csrf: csrf },
      headers: { origin: 'https://evil.example' },
    });
    expect(cross.status).toBe(403);
    expect((await req('/approvals', { cookie })).status).toBe(200);
  });

  it('sends a strict Content-Security-Policy and a same-origin referrer policy on every page', async () => {
    for (const res of [await req('/login'), await req('/assets/console.js')]) {
      expect(res.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
      expect(res.headers.get('referrer-policy')).toBe('same-origin');
    }
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe-inline');
  });

  it('sends the same security headers on every kind of answer, and none of the middleware’s others', async () => {
    const { cookie, csrf } = await signIn();
    const events = await req('/events', { cookie });
    await events.body?.cancel();
    const answers: [string, Response][] = [
      ['a page', await req('/approvals', { cookie })],
      ['a live fragment', await req('/runs/list', { cookie })],
      ['the event stream', events],
      ['the stylesheet', await req('/assets/console.css')],
      ['the script', await req('/assets/console.js')],
      ['the favicon', await req('/favicon.ico')],
      ['the sign-in page', await req('/login')],
      ['a refused sign-in', await req('/login', { form: { token: 'nope' } })],
      ['a page without a session', await req('/approvals')],
      ['a form without its token', await req('/logout', { cookie, form: {} })],
      ['a redirect after a form', await req(`/sessions/none/revoke`, { cookie, form: { _csrf: csrf } })],
      ['a 404', await req('/nowhere', { cookie })],
      [
        'a rebound host name',
        await t.app.request('http://evil.example/approvals', { headers: { host: 'evil.example' } }),
      ],
    ];
    expect(answers.map(([what, res]) => `${what} ${res.status}`)).toEqual([
      'a page 200',
      'a live fragment 200',
      'the event stream 200',
      'the stylesheet 200',
      'the script 200',
      'the favicon 204',
      'the sign-in page 200',
      'a refused sign-in 403',
      'a page without a session 401',
      'a form without its token 403',
      'a redirect after a form 303',
      'a 404 404',
      'a rebound host name 421',
    ]);
    for (const [what, res] of answers) {
      const sent = {
        what,
        csp: res.headers.get('content-security-policy'),
        nosniff: res.headers.get('x-content-type-options'),
        referrer: res.headers.get('referrer-policy'),
        frames: res.headers.get('x-frame-options'),
        cache: res.headers.get('cache-control'),
      };
      expect(sent).toEqual({
        what,
        csp: CONTENT_SECURITY_POLICY,
        nosniff: 'nosniff',
        referrer: 'same-origin',
        frames: 'DENY',
        cache: 'no-store',
      });
      for (const other of [
        'strict-transport-security',
        'cross-origin-opener-policy',
        'cross-origin-resource-policy',
        'origin-agent-cluster',
        'x-dns-prefetch-control',
        'x-download-options',
        'x-permitted-cross-domain-policies',
        'x-xss-protection',
      ])
        expect(res.headers.get(other), `${what}: ${other}`).toBeNull();
    }
  });
});

describe('web console approvals', () => {
  it('shows a pending request with the full text the admin chat was shown', async () => {
    const { id } = await t.ask();
    const { cookie } = await signIn();
    const page = await (await req('/approvals', { cookie })).text();
    expect(page).toContain(`Approval needed: ${id}`);
    expect(page).toContain('touch /workspace/group/x');
    expect(page).toContain(`action="/approvals/${id}/approve"`);
  });

  it('refuses a POST without the CSRF token, or with another session’s, and the request stays pending', async () => {
    const { id } = await t.ask();
    const { cookie } = await signIn();
    const other = await signIn();
    for (const form of [{}, { _csrf: other.csrf }, { _csrf: 'x' }] as Record<string, string>[]) {
      const res = await req(`/approvals/${id}/approve`, { cookie, form });
      expect(res.status).toBe(403);
    }
    expect(t.store.approvals.get(id)?.status).toBe('pending');
  });

  it('decides through the approval service: the run gets the answer, the audit names the console, the admin chats are told', async () => {
    const { id, result } = await t.ask();
    const { cookie, csrf } = await signIn();
    const session = t.auth.list()[0]?.id;
    const res = await req(`/approvals/${id}/approve`, { cookie, form: { _csrf: csrf } });
    expect(res.status).toBe(303);
    expect(await result).toEqual({ outcome: 'approved', id, by: `web:${session}` });
    const granted = t.store.audit.tail(20).find((r) => r.decision === 'approval-granted');
    expect(granted).toMatchObject({
      approver: `web:${session}`,
      reason: 'approved by the owner in the web console',
    });
    expect(t.told).toEqual([
      `Decided in the web console: Approved ${id}: bash may run once, with the parameters shown.`,
    ]);
    // Decided once: a second press changes nothing and says why.
    const again = await req(`/approvals/${id}/deny`, { cookie, form: { _csrf: csrf } });
    expect(again.status).toBe(409);
    expect(await again.text()).toContain('already approved');
    const page = await (await req(`/approvals?decided=${id}`, { cookie })).text();
    expect(page).toContain(`Request ${id} is approved`);
  });
});

describe('web console pages', () => {
  it('renders a page of 1,000 audit rows, newest first, and filters by group and kind', async () => {
    for (let i = 0; i < 1100; i++)
      t.store.audit.record({
        groupId: i % 2 ? 'alpha' : 'main',
        operation: i % 3 ? 'bash' : 'bash.cop',
        decision: 'allowed',
      });
    const { cookie } = await signIn();
    const page = await (await req('/audit', { cookie })).text();
    expect(page.match(/<tr data-audit="\d+">/g)?.length).toBe(1000);
    expect(page).toContain('id="older"');
    const filtered = await (await req('/audit?group=alpha&kind=bash.cop', { cookie })).text();
    const rows = filtered.match(/<tr data-audit="\d+">.*?<\/tr>/g) ?? [];
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows)
      expect(r).toContain(
        '<td data-label="Group">alpha</td><td data-label="Run"></td><td data-label="Operation">bash.cop</td>',
      );
    expect((await req('/audit?since=yesterday', { cookie })).status).toBe(400);
  });

  it('shows the spend of a run from the gateway’s records, and per day against the cap', async () => {
    t.store.db
      .prepare(
        `INSERT INTO gateway_usage (run_id, group_id, day, model, requests, prompt_tokens, completion_tokens, cost_micros)
         VALUES ('12', 'alpha', '2026-11-27', 'gpt-test', 2, 100, 20, 4321),
                ('transcription:alpha:2026-11-27T07:59Z', 'alpha', '2026-11-27', 'whisper-1', 1, 0, 0, 300),
                ('review:alpha:12', 'alpha', '2026-11-27', 'gpt-test', 3, 3000, 30, 200)`,
      )
      .run();
    const { cookie } = await signIn();
    const page = await (await req('/spend', { cookie })).text();
    expect(page).toContain('$0.0043');
    expect(page).toMatch(/data-run="12"/);
    // Voice notes belong to no run: named as such, at their minute, with no link to a run page.
    expect(page).toContain(
      '<tr data-run="transcription:alpha:2026-11-27T07:59Z"><td data-label="Run">voice transcription</td><td data-label="Group">alpha</td><td data-label="Started"><time datetime="2026-11-27T07:59:00.000Z" title="2026-11-27 07:59:00 UTC">08:59:00 <span class="ago">1 min ago</span></time></td>',
    );
    // The Cop's reviews of run 12 are their own entry, linked to the run they reviewed.
    expect(page).toMatch(
      /data-run="review:alpha:12"><td data-label="Run">Cop reviews of <a href="\/runs\/12">12<\/a><\/td><td data-label="Group">alpha<\/td>/,
    );
    // The per-day chart has the day's bar, and the cap's line.
    expect(page).toContain('<title>2026-11-27: $0.0048</title>'); // the run's, the transcription's, the reviews'
    expect(page).toContain('<title>daily cap $5.0000</title>');
  });

  it('puts a config version back as carapace config rollback does, only with the CSRF token, and the host reloads', async () => {
    const files = createConfigFileStore({ configFile: t.configFile });
    const v1 = files.read();
    files.write('[assistant]\nname = "Max"\n', v1.hash);
    const { cookie, csrf } = await signIn();
    const page = await (await req('/config', { cookie })).text();
    expect(page).toContain('assistant.name: &quot;Andy&quot; → &quot;Max&quot;');
    expect(page).toContain('action="/config/rollback/1"');

    expect((await req('/config/rollback/1', { cookie, form: {} })).status).toBe(403);
    expect(fs.readFileSync(t.configFile, 'utf8')).toContain('"Max"');
    expect(t.reloads).toBe(0);

    const done = await req('/config/rollback/1', { cookie, form: { _csrf: csrf } });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain('Put back version 1. applied to the running host');
    expect(fs.readFileSync(t.configFile, 'utf8')).toBe(v1.text);
    expect(t.reloads).toBe(1);
    expect(t.store.audit.tail(5).find((r) => r.operation === 'config.rollback')).toMatchObject({
      decision: 'applied',
      approver: expect.stringMatching(/^web:/),
    });
    expect((await req('/config/rollback/9', { cookie, form: { _csrf: csrf } })).status).toBe(409);
  });

  it('registers a chat that wrote with groups add’s checks, and refuses one of a channel that is not configured', async () => {
    t.store.chatsSeen.seen('local', 'beta', 'Beta chat');
    t.store.chatsSeen.seen('telegram', '-1001234567890', 'Family');
    const { cookie, csrf } = await signIn();
    const page = await (await req('/groups', { cookie })).text();
    expect(page).toContain('value="-1001234567890"');

    const refused = await req('/groups/register', {
      cookie,
      form: { _csrf: csrf, id: 'family', channel: 'telegram', chat: '-1001234567890' },
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('Not registered: the telegram channel is not configured');
    expect(t.store.groups.get('family')).toBeUndefined();

    const added = await req('/groups/register', {
      cookie,
      form: { _csrf: csrf, id: 'beta', channel: 'local', chat: 'beta' },
    });
    expect(added.status).toBe(200);
    const after = await added.text();
    expect(after).toContain('Registered beta (local:beta, network gateway).');
    expect(after).not.toContain('value="beta"');
    expect(t.store.groups.get('beta')).toMatchObject({ channel: 'local', isAdmin: false });
    expect(t.store.audit.tail(5).find((r) => r.operation === 'groups.add')).toMatchObject({
      groupId: 'beta',
      approver: expect.stringMatching(/^web:/),
    });
    expect(
      (await req('/groups/register', { cookie, form: { id: 'gamma', channel: 'local', chat: 'g' } })).status,
    ).toBe(403);
  });

  it('shows a run’s timeline: the messages it was given, its decisions with their reasons, its replies', async () => {
    const mid = t.store.messages.insert({
      groupId: 'alpha',
      channel: 'local',
      chatId: 'alpha',
      externalId: 'm1',
      senderId: 'u1',
      senderName: 'Ann',
      text: '@Andy what is <b>up</b>?',
      sentAt: new Date().toISOString(),
      triggers: true,
    });
    const run = t.store.runs.start('alpha', 1, mid ?? 0);
    t.store.audit.record({
      runId: run.id,
      groupId: 'alpha',
      operation: 'bash',
      decision: 'denied',
      reason: 'not approved by the owner',
    });
    const { cookie } = await signIn();
    const page = await (await req(`/runs/${run.id}`, { cookie })).text();
    expect(page).toContain('message (triggered)');
    expect(page).toContain('Ann: @Andy what is &lt;b&gt;up&lt;/b&gt;?');
    expect(page).toContain('bash denied');
    expect(page).toContain('not approved by the owner');
    expect((await req('/runs/999', { cookie })).status).toBe(404);
  });

  it('streams live updates to a signed-in page, and ends the stream once its session is revoked', async () => {
    const { cookie } = await signIn();
    const res = await req('/events', { cookie });
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    const until = async (needle: string) => {
      while (!seen.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before "${needle}"; it sent: ${seen}`);
        seen += value;
      }
    };
    // The stream has subscribed by the time its response is returned.
    expect(t.events.listenerCount('approval-changed')).toBe(1);
    t.events.emit('approval-changed', 'abc234');
    t.timers.advance(100);
    await until('event: approvals');
    t.auth.revoke(t.auth.list()[0]?.id ?? '', 'test');
    t.events.emit('approval-changed', 'abc234');
    t.timers.advance(100);
    await until('event: bye');
    const { done } = await reader.read();
    expect(done).toBe(true);
  });

  it('sends a burst of events as one message per kind, keeps the stream alive, and leaves nothing behind when it closes', async () => {
    const { cookie } = await signIn();
    const res = await req('/events', { cookie });
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    const until = async (needle: string) => {
      while (!seen.includes(needle)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended before "${needle}"; it sent: ${seen}`);
        seen += value;
      }
    };
    for (let i = 0; i < 5; i++) t.events.emit('group-state', 'alpha');
    t.events.emit('approval-changed', 'abc234');
    t.timers.advance(99);
    t.events.emit('group-state', 'alpha');
    t.timers.advance(1);
    // A sentinel after the burst: once it arrives, everything the burst caused has been written.
    t.events.emit('outbox-delivered', {} as never);
    t.timers.advance(100);
    await until('event: chat');
    expect(seen.match(/event: runs/g)).toHaveLength(1);
    expect(seen.match(/event: approvals/g)).toHaveLength(1);
    expect(seen).not.toContain('keep-alive');
    t.timers.advance(25_000);
    await until(': keep-alive');
    // The stream's last step is letting go of the event bus: once it has, the stream is done.
    const closed = new Promise<void>((resolve) =>
      (t.events as EventEmitter).on('removeListener', (name) => name === 'outbox-delivered' && resolve()),
    );
    await reader.cancel();
    await closed;
    expect(t.events.listenerCount('group-state')).toBe(0);
    expect(t.timers.live()).toEqual([]);
  });

  it('shows times in [assistant] timezone with how long ago, and names each cell’s column for the phone’s cards', async () => {
    t.store.audit.record({
      groupId: 'alpha',
      runId: 12,
      operation: 'bash',
      decision: 'denied',
      reason: 'not approved by the owner',
      approver: 'local:owner',
    });
    t.now.t += 3 * 60_000;
    const { cookie } = await signIn();
    const page = await (await req('/audit', { cookie })).text();
    // 08:00 UTC is 09:00 in Berlin; the UTC instant stays in the markup.
    expect(page).toContain(
      '<td data-label="When"><time datetime="2026-11-27T08:00:00.000Z" title="2026-11-27 08:00:00 UTC">09:00:00 <span class="ago">3 min ago</span></time></td>',
    );
    expect(page).toContain(
      '<td data-label="Decision" class="status">denied</td><td data-label="Reason" class="wrap">not approved by the owner</td><td data-label="By">local:owner</td>',
    );
    expect(page).toContain('Times are in Europe/Berlin');
    // Since and Until are typed as the table shows times: 09:00 in Berlin is the row's 08:00 UTC.
    const since = async (t: string) =>
      (await (await req(`/audit?since=${t}&kind=bash`, { cookie })).text()).match(/<tr data-audit=/g)
        ?.length ?? 0;
    expect(await since('2026-11-27T08:59')).toBe(1);
    expect(await since('2026-11-27T09:01')).toBe(0);
    expect(await since('2026-11-27T08:01Z')).toBe(0);
    expect(page).not.toMatch(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z<\/td>/);
    // Every table of every page labels its cells: the stylesheet turns rows into cards under 40rem.
    const css = await (await req('/assets/console.css')).text();
    expect(css).toContain('@media (max-width:40rem)');
    expect(css).toContain('content:attr(data-label)');
    for (const p of [
      '/approvals',
      '/runs',
      '/spend',
      '/audit',
      '/groups',
      '/health',
      '/config',
      '/sessions',
    ]) {
      const html = await (await req(p, { cookie })).text();
      expect(html.match(/<td(?! data-label=)[ >]/g), p).toBeNull();
    }
  });

  it('shows a run’s times as offsets from its start and its duration, and a cost below $0.0001 to the micro-dollar', async () => {
    const run = t.store.runs.start('alpha', 1, 0);
    t.now.t += 2_400;
    t.store.audit.record({ runId: run.id, groupId: 'alpha', operation: 'bash', decision: 'allowed' });
    t.now.t += 180_000;
    t.store.runs.finish(run.id, 'succeeded', 'answered');
    t.store.db
      .prepare(
        `INSERT INTO gateway_usage (run_id, group_id, day, model, requests, prompt_tokens, completion_tokens, cost_micros)
         VALUES (?, 'alpha', '2026-11-27', 'cheap-model', 1, 12, 3, 42)`,
      )
      .run(String(run.id));
    const { cookie } = await signIn();
    const page = await (await req(`/runs/${run.id}`, { cookie })).text();
    expect(page).toContain('<span class="offset">+2.4 s</span> <span class="muted">09:00:02</span>');
    expect(page).toContain('took <span id="run-took">3 min</span>');
    expect(page).toContain(
      '<strong id="run-cost"><span class="cost" title="$0.000042 (42 micro-dollars)">$0.000042</span></strong>',
    );
    const runs = await (await req('/runs', { cookie })).text();
    expect(runs).toContain(`<tr data-run="${run.id}">`);
    expect(runs).toContain('<td data-label="Took">3 min</td>');
    const spend = await (await req('/spend', { cookie })).text();
    expect(spend).toContain('$0.000042');
    expect(spend).not.toContain('>$0.0000<');
  });

  it('shows a push waiting for the owner with its commits’ messages, authors and files, not only hashes', async () => {
    const { id } = await t.ask({
      operation: 'credential.recipes',
      reason: 'it pushes to protected refs/heads/main',
      params: {
        credential: 'recipes',
        remote: 'https://git.example/family/recipes.git',
        push: [{ ref: 'refs/heads/main', from: 'aaaaaaaaaaaa', to: 'bbbbbbbbbbbb' }],
        commits: [
          {
            id: 'bbbbbbbbbbbb',
            author: 'Family bot <bot@example.com>',
            date: '2026-11-27T07:58:00.000Z',
            message: 'add waffles\n\nWith <b>syrup</b>.',
          },
        ],
        files: ['recipes/waffles.md'],
        filesNotNamed:
          "1 more changed object was sent as a delta (against the remote's copy or a file's earlier version), so the push does not name its file",
      },
    });
    const { cookie } = await signIn();
    const page = await (await req('/approvals', { cookie })).text();
    const card = page.slice(page.indexOf(`data-approval="${id}"`));
    expect(card).toContain('<li data-commit="bbbbbbbbbbbb"><strong>add waffles</strong>');
    expect(card).toContain('Family bot &lt;bot@example.com&gt;, <time datetime="2026-11-27T07:58:00.000Z"');
    expect(card).toContain('<pre>With &lt;b&gt;syrup&lt;/b&gt;.</pre>');
    expect(card).toContain('<ul class="files"><li>recipes/waffles.md</li></ul>');
    expect(card).toContain('so the push does not name its file.');
    // The chat's text carries the same detail: it renders the same stored parameters.
    expect(card).toContain(
      '&quot;message&quot;: &quot;add waffles\\n\\nWith &lt;b&gt;syrup&lt;/b&gt;.&quot;',
    );
    expect(card).toMatch(/Expires in 5 min, at 09:05:00\./);
  });

  it('shows the host’s health, and the doctor’s checks only when asked for', async () => {
    const { cookie } = await signIn();
    const page = await (await req('/health', { cookie })).text();
    expect(page).toContain(
      '<td data-label="Channel">local</td><td data-label="State" class="status">connected</td>',
    );
    expect(page).toContain('id="run-doctor"');
    expect(page).toContain('<td data-label="Credential">github</td><td data-label="Kind">git</td>');
    expect(page).not.toContain('data-check=');
    const checked = await (await req('/health?doctor=1', { cookie })).text();
    expect(checked).toContain(
      '<tr data-check="agent image"><td data-label="Check">agent image</td><td data-label="Result" class="status">FAIL</td>',
    );
    expect(checked).toContain('carapace image build');
  });
});
