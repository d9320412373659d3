/**
 * The web console in the real host wiring (startHost, echo runner): off unless `[web] listen` is set, a
 * sign-in link from the owner's admin chat, the Message page writing to the admin group through the
 * console channel's path, and a start that cannot take the port fails naming the step.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { HostStartError } from '../../../host/app/start-error.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { sendAndWait } from '../../../host/channels/local/send-and-wait.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import { createEchoRunner } from '../../fakes/echo-runner.ts';
import { staticRunner } from '../../helpers/static-runner.ts';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function host(web: Record<string, unknown>): Promise<{ host: RunningHost; socketFile: string }> {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-web-')));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  const running = await startHost({
    paths,
    config: hostConfigSchema.parse({ web }),
    createRunner: staticRunner(createEchoRunner()),
    logger: pino({ level: 'silent' }),
    redact: (s) => s,
  });
  cleanups.push(() => running.stop('end of test'));
  return { host: running, socketFile: paths.socketFile };
}

it('is off unless [web] listen is set: carapace web login says how to turn it on', async () => {
  const { socketFile } = await host({});
  await expect(createLocalClient(socketFile).webLogin()).rejects.toThrow(
    /the web console is off: set \[web\] listen = "127.0.0.1:8750"/,
  );
});

it('gives the owner a sign-in link in the admin chat that signs a browser in once', async () => {
  const { socketFile } = await host({ listen: '127.0.0.1:0' });
  const client = createLocalClient(socketFile);
  const replies: string[] = [];
  const result = await sendAndWait({
    client,
    group: 'main',
    text: 'web login',
    timeoutMs: 10_000,
    onlyCommandAnswer: true,
    onReply: (t) => replies.push(t),
  });
  expect(result.kind).toBe('answered');
  const url = /(http:\/\/127\.0\.0\.1:\d+\/login\?token=\S+)/.exec(replies.join('\n'))?.[1] ?? '';
  expect(url).not.toBe('');
  const token = new URL(url).searchParams.get('token') ?? '';
  const signIn = () =>
    fetch(new URL('/login', url), {
      method: 'POST',
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
  const first = await signIn();
  expect(first.status).toBe(303);
  const cookie = (first.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  expect((await fetch(new URL('/approvals', url), { headers: { cookie } })).status).toBe(200);
  expect((await signIn()).status).toBe(403);
});

/** Signs a client in through `carapace web login`'s socket route; returns the base URL and the cookie. */
async function webSession(socketFile: string): Promise<{ base: URL; cookie: string }> {
  const { url } = await createLocalClient(socketFile).webLogin();
  const token = new URL(url).searchParams.get('token') ?? '';
  const res = await fetch(new URL('/login', url), {
    method: 'POST',
    body: new URLSearchParams({ token }),
    redirect: 'manual',
  });
  expect(res.status).toBe(303);
  return { base: new URL(url), cookie: (res.headers.get('set-cookie') ?? '').split(';')[0] ?? '' };
}

it("sends the Message page's text to the admin group as the owner's own message, once, audited, and shows the answer", async () => {
  const { host: running, socketFile } = await host({ listen: '127.0.0.1:0' });
  const { base, cookie } = await webSession(socketFile);
  const page = await (await fetch(new URL('/message', base), { headers: { cookie } })).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
  const clientMessageId = /name="clientMessageId" value="([^"]+)"/.exec(page)?.[1] ?? '';
  expect(page).toContain('To the admin group <strong>main</strong>');
  const post = (form: Record<string, string>) =>
    fetch(new URL('/message', base), {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
      redirect: 'manual',
    });

  // Without the session's CSRF token nothing is stored.
  expect((await post({ text: 'forged', clientMessageId })).status).toBe(403);
  const sent = await post({ _csrf: csrf, text: 'what is on today?', clientMessageId });
  expect(sent.status).toBe(303);
  const follow = sent.headers.get('location') ?? '';
  expect(follow).toMatch(/^\/message\?after=\d+$/);
  // The same form sent twice (a double tap) is one message.
  expect((await post({ _csrf: csrf, text: 'what is on today?', clientMessageId })).status).toBe(303);

  const stored = running.store.messages.after('main', 0);
  expect(stored.map((m) => [m.text, m.senderId, m.triggers])).toEqual([['what is on today?', 'owner', true]]);
  expect(
    running.store.audit
      .tail(20)
      .filter((r) => r.operation === 'web.message')
      .map((r) => [r.groupId, r.decision, r.approver?.startsWith('web:')]),
  ).toEqual([
    ['main', 'sent', true],
    ['main', 'duplicate', true],
  ]);

  // The admin group answered (the echo runner), as the console's own client sees it; then the page the
  // redirect names shows the answer.
  const after = Number(follow.split('=')[1]);
  const answered = new AbortController();
  await createLocalClient(socketFile)
    .events(
      'main',
      after,
      (e) => {
        if (e.type === 'reply' && e.text === 'echo: what is on today?') answered.abort();
      },
      answered.signal,
    )
    .catch((err: unknown) => {
      if (!answered.signal.aborted) throw err;
    });
  const shown = await (
    await fetch(new URL(follow.replace('/message', '/message/replies'), base), { headers: { cookie } })
  ).text();
  expect(shown).toMatch(/<pre class="reply" data-outbox="\d+">echo: what is on today\?<\/pre>/);
});

it('fails to start, naming the step, when the port is taken', async () => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const port = (blocker.address() as net.AddressInfo).port;
  const started = host({ listen: `127.0.0.1:${port}` });
  await expect(started).rejects.toBeInstanceOf(HostStartError);
  await expect(started).rejects.toThrow(`starting the web console on 127.0.0.1:${port}`);
});
