/**
 * The web console in the real host wiring (startHost, echo runner): off unless `[web] listen` is set, a
 * sign-in link from the owner's admin chat, and a start that cannot take the port fails naming the step.
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

it('fails to start, naming the step, when the port is taken', async () => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => blocker.close(() => resolve())));
  const port = (blocker.address() as net.AddressInfo).port;
  const started = host({ listen: `127.0.0.1:${port}` });
  await expect(started).rejects.toBeInstanceOf(HostStartError);
  await expect(started).rejects.toThrow(`starting the web console on 127.0.0.1:${port}`);
});
