/**
 * A container that lies: frames claiming another group, admin status or an approval, oversized and
 * malformed frames. Driven over in-memory stdio against the real session, handlers and SQLite; the run
 * must go on, the claim must have no effect, and the audit must say what was refused.
 */
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ContainerExit, ContainerProcess } from '../../../host/containers/run/container-launch.ts';
import { auditProtocolProblem } from '../../../host/ipc/audit-protocol-problem.ts';
import { createHostHandlers, type HostHandlerDeps } from '../../../host/ipc/host-handlers.ts';
import type { RunIdentity } from '../../../host/security/decisions.ts';
import { createRunSession } from '../../../host/ipc/run-session.ts';
import type { RunHandle } from '../../../host/router/agent-runner.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { createBashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../../container-agent/src/bash-gate/wasm-files.ts';
import { createBashLedger } from '../../../host/security/policies/bash-ledger.ts';
import { createBashReports } from '../../../host/security/taint/bash-reports.ts';
import { createSecretReads } from '../../../host/security/taint/secret-reads.ts';
import { createTaintRegistry } from '../../../host/security/taint/taint.ts';
import { fakeClock, type FakeClock } from '../../helpers/fake-clock.ts';
import { idleTaskHandlers } from '../../helpers/idle-task-handlers.ts';
import { refusingConfigHandlers } from '../../helpers/refusing-config-handlers.ts';

let dir: string;
let store: Store;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-forgery-'));
  store = openStore({ file: path.join(dir, 'carapace.db') });
});
afterEach(() => {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The container's side of the stdio, written and read by the test. */
function fakeContainer(onTouch: () => void = () => undefined) {
  const toHost = new PassThrough(); // the agent's stdout
  const fromHost = new PassThrough(); // the agent's stdin
  let exit!: (e: ContainerExit) => void;
  const exited = new Promise<ContainerExit>((r) => (exit = r));
  const replies: Record<string, unknown>[] = [];
  const arrived = new EventEmitter();
  let buffered = '';
  fromHost.setEncoding('utf8');
  fromHost.on('data', (chunk: string) => {
    buffered += chunk;
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      replies.push(JSON.parse(buffered.slice(0, nl)) as Record<string, unknown>);
      buffered = buffered.slice(nl + 1);
      arrived.emit('frame');
    }
  });
  const container: ContainerProcess = {
    name: 'fake',
    id: 'fake',
    stdin: fromHost,
    stdout: toHost,
    stderr: new PassThrough(),
    touch: onTouch,
    beginRun: () => undefined,
    async stop() {
      exit({ exitCode: 137, reason: 'stopped' });
    },
    exited,
  };
  const send = (frame: unknown) =>
    toHost.write(`${typeof frame === 'string' ? frame : JSON.stringify(frame)}\n`);
  /** The host's response to request `id`, once its frame arrives. */
  const replyTo = (id: number) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const check = () => {
        // Responses only: the host's own requests (run.start) carry ids of their own.
        const r = replies.find((x) => x.id === id && !('method' in x));
        if (!r) return;
        arrived.off('frame', check);
        resolve(r);
      };
      arrived.on('frame', check);
      check();
    });
  return { container, send, replies, replyTo, exit };
}

interface SessionOverrides {
  bashCheck?: () => Promise<{ decision: 'allow' | 'deny'; reason: string }>;
  bashRan?: HostHandlerDeps['bashRan'];
  config?: HostHandlerDeps['config'];
  onTouch?: () => void;
  keepAliveMs?: number;
  /** The session's timers: the grace period after run.done, the keep-alive (default: the system clock). */
  clock?: FakeClock;
}

function startSession(isAdmin: boolean, overrides: SessionOverrides = {}) {
  for (const [id, admin] of [
    ['main', true],
    ['fam', false],
    ['work', false],
  ] as const) {
    if (!store.groups.get(id))
      store.groups.add({ id, channel: 'local', chatId: id, name: id, isAdmin: admin });
  }
  const group = store.groups.get(isAdmin ? 'main' : 'fam');
  if (!group) throw new Error('setup');
  const identity: RunIdentity = { runId: 42, group, secretMounts: [] };
  const sent: { to: string; text: string }[] = [];
  const fake = fakeContainer(overrides.onTouch);
  const handle: RunHandle = createRunSession({
    container: fake.container,
    start: {
      runId: 42,
      group: { id: group.id, name: group.name, isAdmin: group.isAdmin, channel: 'local' },
      assistantName: 'Andy',
      timezone: 'UTC',
      formatting: 'plain',
      messages: [],
      limits: { maxToolSteps: 5, maxOutputTokens: 100, wallTimeMs: 60_000 },
      gatewayKey: 'gw-forgery-test',
    },
    handlers: (onDone, stopRun) =>
      createHostHandlers({
        identity,
        callbacks: {
          reply: async (text) => void sent.push({ to: group.id, text }),
          sendToGroup: async (to, text) => void sent.push({ to, text }),
        },
        groups: store.groups,
        audit: store.audit,
        onDone,
        bashCheck: overrides.bashCheck ?? (async () => ({ decision: 'deny', reason: 'test' })),
        bashRan: overrides.bashRan ?? (() => ({ missed: false })),
        fileRead: () => undefined,
        stopRun,
        callService: async () => null,
        reviewMessage: async () => ({ allowed: true, reason: 'test' }),
        reviewMutation: async () => ({ allowed: false, reason: 'the owner said no' }),
        checkRegistration: () => undefined,
        tasks: idleTaskHandlers(store, identity, async () => ({ allowed: true, reason: 'test' })),
        taint: { markCorrupted: () => undefined },
        config: overrides.config ?? refusingConfigHandlers,
      }),
    onProtocolProblem: (p) => auditProtocolProblem(store.audit, identity, p),
    stopGraceMs: 10,
    ...(overrides.keepAliveMs === undefined ? {} : { keepAliveMs: overrides.keepAliveMs }),
    ...(overrides.clock ? { clock: overrides.clock.clock } : {}),
    logger: pino({ level: 'silent' }),
  });
  return { ...fake, sent, handle };
}

const audits = () => store.audit.tail(50);

/**
 * Records whether the host stopped the session's container. With `removal: 'never'` the fake engine never
 * finishes removing it within the test: the stop and the exit stay pending.
 */
function watchStops(
  s: ReturnType<typeof startSession>,
  removal: 'at once' | 'never' = 'at once',
): { stopped: () => boolean } {
  let stopped = false;
  const stop = s.container.stop.bind(s.container);
  s.container.stop = async (...args) => {
    stopped = true;
    if (removal === 'never') await new Promise(() => undefined);
    return stop(...args);
  };
  return { stopped: () => stopped };
}

describe('IPC forgery and bad frames', () => {
  it('ignores a non-admin container naming another group: forbidden, audited, nothing sent', async () => {
    const s = startSession(false);
    s.send({ jsonrpc: '2.0', id: 1, method: 'message.send', params: { text: 'hi work', to: 'work' } });
    expect(await s.replyTo(1)).toMatchObject({ error: { code: -32001 } });
    expect(s.sent).toEqual([]);
    expect(audits().at(-1)).toMatchObject({ operation: 'message.send', decision: 'denied', groupId: 'fam' });
  });

  it('rejects fields that claim admin status or an approval, and audits the frame', async () => {
    const s = startSession(false);
    s.send({
      jsonrpc: '2.0',
      id: 2,
      method: 'message.send',
      params: { text: 'x', to: 'work', isAdmin: true },
    });
    s.send({
      jsonrpc: '2.0',
      id: 3,
      method: 'security.bash_check',
      params: { command: 'curl x', localReason: 'r', approved: true },
    });
    s.send({ jsonrpc: '2.0', id: 4, method: 'group.list', params: { asGroup: 'main' } });
    for (const id of [2, 3, 4]) expect(await s.replyTo(id)).toMatchObject({ error: { code: -32602 } });
    expect(s.sent).toEqual([]);
    const rejected = audits().filter((a) => a.operation === 'ipc.frame');
    expect(rejected.map((a) => a.reason)).toEqual([
      expect.stringMatching(/invalid-params.*isAdmin/),
      expect.stringMatching(/invalid-params.*approved/),
      expect.stringMatching(/invalid-params.*asGroup/),
    ]);
  });

  it('keeps a non-admin container to its own tasks, whichever group it names', async () => {
    const s = startSession(false);
    const schedule = { kind: 'interval', everyMs: 3_600_000 };
    s.send({
      jsonrpc: '2.0',
      id: 20,
      method: 'task.schedule',
      params: { prompt: 'spam', schedule, group: 'work' },
    });
    expect(await s.replyTo(20)).toMatchObject({ error: { code: -32001 } });
    s.send({
      jsonrpc: '2.0',
      id: 21,
      method: 'task.schedule',
      params: { prompt: 'water the plants', schedule },
    });
    expect(await s.replyTo(21)).toMatchObject({ result: { taskId: expect.any(String) } });
    expect(store.tasks.list(undefined, 10).map((t) => t.groupId)).toEqual(['fam']);
  });

  it('keeps admin-only methods from other groups whatever they send', async () => {
    const s = startSession(false);
    s.send({ jsonrpc: '2.0', id: 5, method: 'group.list', params: {} });
    expect(await s.replyTo(5)).toMatchObject({ error: { code: -32001 } });
    const admin = startSession(true);
    admin.send({ jsonrpc: '2.0', id: 6, method: 'group.list', params: {} });
    expect(((await admin.replyTo(6)).result as { groups: unknown[] }).groups).toHaveLength(3);
  });

  it('keeps config.read and config.propose from other groups: forbidden before the host reads or reviews anything', async () => {
    const calls: string[] = [];
    const config: HostHandlerDeps['config'] = {
      read: async () => {
        calls.push('read');
        return { text: '[assistant]\nname = "Andy"\n', hash: 'a'.repeat(64) };
      },
      propose: async () => {
        calls.push('propose');
        return { status: 'applied', detail: 'should never happen' };
      },
    };
    const s = startSession(false, { config });
    const propose = {
      baseHash: 'a'.repeat(64),
      changes: [{ key: 'assistant.name', value: 'Max' }],
      reason: 'the owner asked',
    };
    s.send({ jsonrpc: '2.0', id: 40, method: 'config.read', params: {} });
    s.send({ jsonrpc: '2.0', id: 41, method: 'config.propose', params: propose });
    expect(await s.replyTo(40)).toMatchObject({ error: { code: -32001 } });
    expect(await s.replyTo(41)).toMatchObject({ error: { code: -32001 } });
    // A field claiming admin status or an approval is not even a valid frame.
    s.send({ jsonrpc: '2.0', id: 42, method: 'config.propose', params: { ...propose, isAdmin: true } });
    s.send({ jsonrpc: '2.0', id: 43, method: 'config.propose', params: { ...propose, approved: true } });
    for (const id of [42, 43]) expect(await s.replyTo(id)).toMatchObject({ error: { code: -32602 } });
    expect(calls).toEqual([]);
    expect(
      audits()
        .filter((a) => a.operation.startsWith('config.'))
        .map((a) => [a.operation, a.decision, a.groupId]),
    ).toEqual([
      ['config.read', 'denied', 'fam'],
      ['config.propose', 'denied', 'fam'],
    ]);

    const admin = startSession(true, { config });
    admin.send({ jsonrpc: '2.0', id: 44, method: 'config.read', params: {} });
    expect(await admin.replyTo(44)).toMatchObject({ result: { hash: 'a'.repeat(64) } });
    expect(calls).toEqual(['read']);
  });

  it('ends the run once run.done is confirmed, without waiting for the container to be gone', async () => {
    const clock = fakeClock(0);
    const s = startSession(false, { clock });
    // The engine never gets round to removing it: exited does not settle in this test.
    const { stopped } = watchStops(s, 'never');
    s.send({ jsonrpc: '2.0', id: 30, method: 'run.done', params: { status: 'ok' } });
    expect(await s.replyTo(30)).toMatchObject({ result: { ok: true } });
    expect(await s.handle.done).toEqual({ ok: true, reason: 'completed' });
    // Its stdin is closed at once; this agent does not exit by itself, so once the grace period (10 ms)
    // is over it is stopped, off the run's path.
    expect(s.container.stdin.writableEnded).toBe(true);
    clock.advance(9);
    await nextTurn();
    expect(stopped()).toBe(false);
    clock.advance(1);
    await nextTurn();
    expect(stopped()).toBe(true);
  });

  it('leaves a finished agent that exits by itself alone: no signal races its last log lines', async () => {
    const clock = fakeClock(0);
    const s = startSession(false, { clock });
    const { stopped } = watchStops(s);
    // As the real agent: it takes in run.start (an unanswered one stops the container when it exits)…
    const start = await vi.waitFor(() => {
      const request = s.replies.find((r) => r.method === 'run.start');
      if (!request) throw new Error('no run.start yet');
      return request;
    });
    s.send({ jsonrpc: '2.0', id: start.id, result: { accepted: true } });
    // …and exits once its stdin ends.
    s.container.stdin.once('finish', () => void s.exit({ exitCode: 0, reason: 'exited' }));
    s.send({ jsonrpc: '2.0', id: 31, method: 'run.done', params: { status: 'ok' } });
    expect(await s.replyTo(31)).toMatchObject({ result: { ok: true } });
    expect(await s.handle.done).toEqual({ ok: true, reason: 'completed' });
    expect(await s.container.exited).toMatchObject({ reason: 'exited' });
    // Past the grace period (10 ms here) on the session's clock: never stopped.
    clock.advance(1_000);
    await nextTurn();
    expect(stopped()).toBe(false);
  });

  it('survives malformed and oversized frames and goes on serving valid ones', async () => {
    const s = startSession(false);
    s.send('{this is not json');
    s.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'message.send',
        params: { text: 'x'.repeat(2 * 1024 * 1024) },
      }),
    );
    s.send({ jsonrpc: '2.0', id: 8, method: 'no.such.method', params: {} });
    s.send({ jsonrpc: '2.0', id: 9, method: 'message.send', params: { text: 'still here' } });
    expect(await s.replyTo(8)).toMatchObject({ error: { code: -32601 } });
    expect(await s.replyTo(9)).toMatchObject({ result: { queued: true } });
    expect(s.sent).toEqual([{ to: 'fam', text: 'still here' }]);
    expect(s.replies.some((r) => (r.error as { code?: number } | undefined)?.code === -32700)).toBe(true);
    expect(s.replies.some((r) => (r.error as { code?: number } | undefined)?.code === -32003)).toBe(true);
    const kinds = audits()
      .filter((a) => a.operation === 'ipc.frame')
      .map((a) => a.reason?.split(':')[0]);
    expect(kinds).toEqual(expect.arrayContaining(['parse-error', 'frame-too-large', 'unknown-method']));
  });

  it('ends a run as failed when the agent exits without run.done, and as completed with it', async () => {
    const failing = startSession(false);
    failing.exit({ exitCode: 0, reason: 'exited' });
    expect(await failing.handle.done).toMatchObject({ ok: false });
    const ok = startSession(false);
    ok.send({ jsonrpc: '2.0', id: 10, method: 'run.done', params: { status: 'ok' } });
    await ok.replyTo(10);
    ok.exit({ exitCode: 0, reason: 'exited' });
    expect(await ok.handle.done).toEqual({ ok: true, reason: 'completed' });
  });
});

describe('group registration over IPC', () => {
  it('lets only the admin group ask, and registers nothing the review refused', async () => {
    const member = startSession(false);
    member.send({
      jsonrpc: '2.0',
      id: 11,
      method: 'group.register',
      params: { id: 'new', channel: 'local', chatId: 'new', name: 'New' },
    });
    expect(await member.replyTo(11)).toMatchObject({ error: { code: -32001 } });
    const admin = startSession(true);
    admin.send({
      jsonrpc: '2.0',
      id: 12,
      method: 'group.register',
      params: { id: 'new', channel: 'local', chatId: 'new', name: 'New' },
    });
    expect(await admin.replyTo(12)).toMatchObject({
      error: { code: -32002, message: expect.stringMatching(/the owner said no/) },
    });
    expect(store.groups.get('new')).toBeUndefined();
  });
});

describe('a host request in flight', () => {
  it('keeps the container from idling out while the host works on it', async () => {
    const touches: number[] = [];
    // The request stays pending until the keep-alive has touched the container twice on its own: the
    // answer waits on those touches, not on a clock.
    let pendingTouches = 0;
    let touchedWhilePending!: () => void;
    const twoKeepAlives = new Promise<void>((resolve) => (touchedWhilePending = resolve));
    let pending = false;
    const s = startSession(false, {
      bashCheck: async () => {
        pending = true;
        await twoKeepAlives;
        pending = false;
        return { decision: 'deny', reason: 'took a while' };
      },
      onTouch: () => {
        touches.push(Date.now());
        if (pending && ++pendingTouches === 2) touchedWhilePending();
      },
      keepAliveMs: 20,
    });
    s.send({
      jsonrpc: '2.0',
      id: 30,
      method: 'security.bash_check',
      params: { command: 'curl x', localReason: 'r' },
    });
    expect(await s.replyTo(30)).toMatchObject({ result: { decision: 'deny' } });
    // Touched when the request came in, twice by the keep-alive while it was pending, and when answered.
    expect(pendingTouches).toBe(2);
    expect(touches.length).toBeGreaterThanOrEqual(4);
  });
});

describe('flooding the reviews', () => {
  it('refuses more than two reviewed requests in flight per run, and serves them again once answered', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const s = startSession(false, {
      bashCheck: async () => {
        await gate;
        return { decision: 'allow', reason: 'ok' };
      },
    });
    for (const id of [40, 41, 42]) {
      s.send({
        jsonrpc: '2.0',
        id,
        method: 'security.bash_check',
        params: { command: `curl x${id}`, localReason: 'r' },
      });
    }
    expect(await s.replyTo(42)).toMatchObject({
      error: { code: -32002, message: expect.stringMatching(/too many/) },
    });
    release();
    expect(await s.replyTo(40)).toMatchObject({ result: { decision: 'allow' } });
    expect(await s.replyTo(41)).toMatchObject({ result: { decision: 'allow' } });
    s.send({
      jsonrpc: '2.0',
      id: 43,
      method: 'security.bash_check',
      params: { command: 'curl y', localReason: 'r' },
    });
    expect(await s.replyTo(43)).toMatchObject({ result: { decision: 'allow' } });
  });
});

describe('commands the container reports running', () => {
  it('stops the run when a command it ran locally is one the host escalates, audited as a gate miss, not retried', async () => {
    const classifier = await createBashClassifier(resolveBashGateWasmPaths());
    const taint = createTaintRegistry({
      initial: () => ({ corruption: false, secret: false }),
      onTainted: () => undefined,
    });
    const bashRan = createBashReports({
      classifier,
      ledger: createBashLedger(),
      taint,
      audit: store.audit,
      secretReads: createSecretReads({ taint, audit: store.audit }),
    });
    const s = startSession(false, { bashRan });
    s.send({ jsonrpc: '2.0', method: 'bash.ran', params: { command: 'ls -la', via: 'local', reason: 'r' } });
    s.send({
      jsonrpc: '2.0',
      method: 'bash.ran',
      params: { command: "sed ':a e id' notes.txt", via: 'local', reason: 'every command is local' },
    });
    const outcome = await s.handle.done;
    expect(outcome).toMatchObject({
      ok: false,
      retryable: false,
      reason: expect.stringMatching(/^gate miss/),
    });
    const rows = store.audit.tail(10).map((r) => [r.operation, r.decision]);
    expect(rows).toEqual([
      ['bash.ran', 'ran'],
      ['bash.gate_miss', 'stopped'],
    ]);
  });
});

describe('a flood of junk on the stream', () => {
  it('audits the first problems one by one and the rest in one row, stops the run past the limit, and reads no further', async () => {
    const s = startSession(false);
    const junk = '{not json\n'.repeat(300_000);
    s.send(junk.slice(0, -1));
    const outcome = await s.handle.done;
    expect(outcome).toMatchObject({
      ok: false,
      retryable: false,
      reason: expect.stringMatching(/more than 200 malformed or unexpected frames/),
    });
    const rows = store.audit.tail(100);
    expect(rows.filter((r) => r.operation === 'ipc.frame')).toHaveLength(11);
    expect(rows.at(-1)?.reason).toMatch(/191 more protocol problems in this run/);
  });
});
