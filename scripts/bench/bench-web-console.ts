/**
 * What the web console costs the host. (1) Reply latency with a console page open on live updates against
 * none, in the same run: `startHost` with the echo runner (so the host's own work is all there is to
 * measure, and a cost of the console would not drown in a container's start), a message posted over the
 * console socket until its reply is delivered, in alternating blocks with and without a signed-in client
 * that holds the event stream open and fetches the live parts again on every event, as the page's script
 * does. (2) A page of 1,000 audit rows: the query alone (baseline), query plus server-side render, and the
 * whole GET over loopback.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startHost } from '../../host/app/host.ts';
import { createLocalClient } from '../../host/channels/local/local-client.ts';
import { sendAndWait } from '../../host/channels/local/send-and-wait.ts';
import { resolvePaths } from '../../host/config/paths.ts';
import { hostConfigSchema } from '../../host/config/schema.ts';
import { auditPage } from '../../host/web/audit/audit-page.ts';
import { createConsoleFormat } from '../../host/web/format.ts';
import { layout } from '../../host/web/html.ts';
import { createEchoRunner } from '../../test/fakes/echo-runner.ts';
import { staticRunner } from '../../test/helpers/static-runner.ts';
import { isMain, median, printFigures, round } from './stats.ts';

const BLOCKS = 8;
const PER_BLOCK = 25;
const RENDERS = 40;

/** A signed-in client that keeps `/events` open and re-fetches the live fragments on every event. */
async function openLivePage(
  base: string,
  cookie: string,
): Promise<{ close(): Promise<void>; events: () => number }> {
  const abort = new AbortController();
  const headers = { cookie };
  const res = await fetch(`${base}/events`, { headers, signal: abort.signal });
  if (res.status !== 200 || !res.body) throw new Error(`/events answered ${res.status}`);
  let events = 0;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const pump = (async () => {
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const name = /^event: (\S+)/m.exec(frame)?.[1];
        if (name === 'runs' || name === 'approvals') {
          events += 1;
          void fetch(`${base}/${name}/list`, { headers })
            .then((r) => r.text())
            .catch(() => undefined);
        }
      }
    }
  })();
  return {
    events: () => events,
    async close() {
      abort.abort();
      await pump;
    },
  };
}

export async function benchWebConsole(): Promise<Record<string, number | string>> {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-bench-web-')));
  const env = { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') };
  const paths = resolvePaths({ env, cwd: dir });
  let base = '';
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        const m = /"url":"([^"]+)","msg":"web console listening"/.exec(chunk.toString());
        if (m?.[1]) base = m[1];
        done();
      },
    }),
  );
  const config = hostConfigSchema.parse({
    web: { listen: '127.0.0.1:0' },
    runs: { prestart: { count: 0 } },
    retention: { interval_ms: 86_400_000 },
  });
  const host = await startHost({
    paths,
    config,
    createRunner: staticRunner(createEchoRunner()),
    logger,
    redact: (s) => s,
  });
  try {
    const client = createLocalClient({ socketFile: paths.socketFile });
    const link = await client.webLogin();
    const signIn = await fetch(`${base}/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: new URL(link.url).searchParams.get('token') ?? '' }),
      redirect: 'manual',
    });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    if (!cookie.startsWith('carapace_session=')) throw new Error(`sign-in failed: ${signIn.status}`);

    let n = 0;
    const turn = async () => {
      const t = performance.now();
      const result = await sendAndWait({
        client,
        group: 'main',
        text: `hello ${n++}`,
        timeoutMs: 10_000,
        onReply() {},
      });
      if (result.kind !== 'answered') throw new Error(`a turn ended ${result.kind}`);
      return performance.now() - t;
    };
    for (let i = 0; i < 20; i++) await turn(); // warm-up
    const none: number[] = [];
    const open: number[] = [];
    let seen = 0;
    for (let b = 0; b < BLOCKS; b++) {
      for (let i = 0; i < PER_BLOCK; i++) none.push(await turn());
      const page = await openLivePage(base, cookie);
      for (let i = 0; i < PER_BLOCK; i++) open.push(await turn());
      seen += page.events();
      await page.close();
    }

    // A page of 1,000 audit rows.
    for (let i = 0; i < 1200; i++)
      host.store.audit.record({
        groupId: `group-${i % 7}`,
        runId: i,
        operation: i % 3 ? 'bash' : 'bash.cop',
        decision: i % 5 ? 'allowed' : 'denied',
        reason: `a reason of ordinary length for row ${i}, as the policies write them`,
      });
    const query: number[] = [];
    const render: number[] = [];
    const http: number[] = [];
    let bytes = 0;
    for (let i = 0; i < RENDERS; i++) {
      let t = performance.now();
      const rows = host.store.consoleReads.auditPage({ limit: 1000 });
      query.push(performance.now() - t);
      t = performance.now();
      const html = layout({
        title: 'Audit',
        path: '/audit',
        csrf: 'x',
        body: auditPage(
          { limit: 1000 },
          host.store.consoleReads.auditPage({ limit: 1000 }),
          createConsoleFormat({ timeZone: 'Europe/Berlin', now: Date.now }),
        ),
      });
      render.push(performance.now() - t);
      bytes = html.length;
      if (rows.length !== 1000) throw new Error(`expected 1000 rows, got ${rows.length}`);
      t = performance.now();
      const res = await fetch(`${base}/audit`, { headers: { cookie } });
      await res.text();
      http.push(performance.now() - t);
    }

    const p50none = median(none);
    const p50open = median(open);
    return {
      'reply p50 ms, no console page': round(p50none, 2),
      'reply p50 ms, a page open on live updates': round(p50open, 2),
      'with page / without (p50)': round(p50open / p50none, 3),
      'turns each': none.length,
      'live events the page received': seen,
      '1,000 audit rows: query p50 ms (baseline)': round(median(query), 2),
      '1,000 audit rows: query + render p50 ms': round(median(render), 2),
      '1,000 audit rows: GET /audit over loopback p50 ms': round(median(http), 2),
      '1,000 audit rows: page size KiB': round(bytes / 1024, 1),
    };
  } finally {
    await host.stop('bench done');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (isMain(import.meta.url)) printFigures('web console', await benchWebConsole());
