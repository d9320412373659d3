import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  RPC_ERROR_CODES,
  agentMethods,
  hostMethods,
  type MethodTable,
} from '../../../container-agent/src/protocol.ts';
import {
  RpcConnectionClosedError,
  RpcError,
  RpcTimeoutError,
} from '../../../container-agent/src/rpc/errors.ts';
import { createLineDecoder } from '../../../container-agent/src/rpc/line-decoder.ts';
import {
  createRpcPeer,
  type ProtocolProblem,
  type RpcHandlers,
} from '../../../container-agent/src/rpc/peer.ts';

// A tiny table for exercising the peer itself.
const echoMethods = {
  echo: {
    params: z.object({ text: z.string().max(10) }).strict(),
    result: z.object({ text: z.string() }).strict(),
  },
  /** Answers once the test opens the gate of that name (never, unless it does). */
  slow: {
    params: z.object({ gate: z.string() }).strict(),
    result: z.object({ done: z.literal(true) }).strict(),
  },
  fail: {
    params: z.object({ kind: z.enum(['rpc', 'plain', 'bad-result']) }).strict(),
    result: z.object({ ok: z.literal(true) }).strict(),
  },
  ping: { params: z.object({ n: z.number() }).strict(), result: z.void(), notification: true },
} as const satisfies MethodTable;

/** Named gates a `slow` handler waits on; opening one before the handler asks for it is fine too. */
function gates() {
  const opened = new Map<string, { promise: Promise<void>; open: () => void }>();
  const get = (name: string) => {
    let gate = opened.get(name);
    if (!gate) {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      gate = { promise, open };
      opened.set(name, gate);
    }
    return gate;
  };
  return { wait: (name: string) => get(name).promise, open: (name: string) => get(name).open() };
}

function echoHandlers(seen: number[] = [], gate = gates()): RpcHandlers<typeof echoMethods> {
  return {
    echo: ({ text }) => ({ text: text.toUpperCase() }),
    slow: async ({ gate: name }) => {
      await gate.wait(name);
      return { done: true as const };
    },
    fail: ({ kind }) => {
      if (kind === 'rpc') throw new RpcError(RPC_ERROR_CODES.denied, 'no, because policy');
      if (kind === 'plain') throw new Error('secret internal detail at /some/path');
      return { ok: 'yes' } as never;
    },
    ping: ({ n }) => {
      seen.push(n);
    },
  };
}

/** A peer serving echoMethods, driven by raw lines; returns the frames it writes. */
function rawServer(seen: number[] = []) {
  const input = new PassThrough();
  const output = new PassThrough();
  const problems: ProtocolProblem[] = [];
  const frames: Array<Record<string, unknown>> = [];
  let buffered = '';
  const waiters: Array<() => void> = [];
  output.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let newline: number;
    while ((newline = buffered.indexOf('\n')) !== -1) {
      frames.push(JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>);
      buffered = buffered.slice(newline + 1);
    }
    waiters.splice(0).forEach((wake) => wake());
  });
  const peer = createRpcPeer({
    input,
    output,
    localMethods: echoMethods,
    handlers: echoHandlers(seen),
    remoteMethods: {},
    onProtocolError: (p) => problems.push(p),
  });
  const waitForFrames = async (count: number): Promise<Array<Record<string, unknown>>> => {
    while (frames.length < count) await new Promise<void>((resolve) => waiters.push(resolve));
    return frames;
  };
  return { input, output, peer, problems, frames, waitForFrames };
}

function connectedPair<A extends MethodTable, B extends MethodTable>(
  aMethods: A,
  aHandlers: RpcHandlers<A>,
  bMethods: B,
  bHandlers: RpcHandlers<B>,
) {
  const aToB = new PassThrough();
  const bToA = new PassThrough();
  const a = createRpcPeer({
    input: bToA,
    output: aToB,
    localMethods: aMethods,
    handlers: aHandlers,
    remoteMethods: bMethods,
  });
  const b = createRpcPeer({
    input: aToB,
    output: bToA,
    localMethods: bMethods,
    handlers: bHandlers,
    remoteMethods: aMethods,
  });
  return { a, b, aToB, bToA };
}

describe('createLineDecoder', () => {
  it('splits lines across chunks, keeps multi-byte characters whole and drops an oversized line', () => {
    const frames: string[] = [];
    const oversize: number[] = [];
    const decoder = createLineDecoder({
      maxFrameBytes: 10,
      onFrame: (l) => frames.push(l),
      onOversize: (r) => oversize.push(r.bytes),
    });
    const euro = Buffer.from('€', 'utf8');
    decoder.push(Buffer.concat([Buffer.from('ab'), euro.subarray(0, 1)]));
    decoder.push(Buffer.concat([euro.subarray(1), Buffer.from('\r\n\n')]));
    decoder.push('0123456789');
    decoder.push('X');
    decoder.push('YZ\nok\nlast');
    decoder.end();
    expect(frames).toEqual(['ab€', 'ok', 'last']);
    expect(oversize).toEqual([13]);
  });

  it('accepts a line of exactly the limit', () => {
    const frames: string[] = [];
    const decoder = createLineDecoder({
      maxFrameBytes: 4,
      onFrame: (l) => frames.push(l),
      onOversize: () => frames.push('OVERSIZE'),
    });
    decoder.push('abcd\nabcde\n');
    expect(frames).toEqual(['abcd', 'OVERSIZE']);
  });
});

describe('createRpcPeer (raw frames)', () => {
  it('answers garbage with -32700 and non-JSON-RPC objects with -32600, and goes on', async () => {
    const s = rawServer();
    s.input.write('this is not json\n');
    s.input.write('[1,2]\n');
    s.input.write('{"jsonrpc":"1.0","id":4,"method":"echo","params":{"text":"a"}}\n');
    s.input.write('"just a string"\n');
    s.input.write('{"jsonrpc":"2.0","id":{"x":1},"method":"echo"}\n');
    s.input.write('{"jsonrpc":"2.0","id":9,"method":"echo","params":{"text":"hi"}}\n');
    const frames = await s.waitForFrames(6);
    expect(frames[0]).toMatchObject({ id: null, error: { code: -32700 } });
    expect(frames[1]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(frames[2]).toMatchObject({ id: 4, error: { code: -32600 } });
    expect(frames[3]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(frames[4]).toMatchObject({ id: null, error: { code: -32600 } });
    expect(frames[5]).toEqual({ jsonrpc: '2.0', id: 9, result: { text: 'HI' } });
    expect(s.problems.map((p) => p.kind)).toEqual([
      'parse-error',
      'invalid-request',
      'invalid-request',
      'invalid-request',
      'invalid-request',
    ]);
  });

  it('skips a 2 MiB line between two valid frames and answers both, reporting the oversize with its id', async () => {
    const s = rawServer();
    s.input.write('{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"one"}}\n');
    const huge = `{"jsonrpc":"2.0","id":2,"method":"echo","params":{"text":"${'x'.repeat(2 * 1024 * 1024)}"}}\n`;
    // Write in pieces, as a pipe would deliver it.
    for (let i = 0; i < huge.length; i += 65536) s.input.write(huge.slice(i, i + 65536));
    s.input.write('{"jsonrpc":"2.0","id":3,"method":"echo","params":{"text":"three"}}\n');
    const byId = new Map((await s.waitForFrames(3)).map((f) => [f.id, f]));
    expect(byId.get(1)).toMatchObject({ result: { text: 'ONE' } });
    expect(byId.get(2)).toMatchObject({ error: { code: RPC_ERROR_CODES.frameTooLarge } });
    expect(byId.get(3)).toMatchObject({ result: { text: 'THREE' } });
    expect(s.problems).toEqual([expect.objectContaining({ kind: 'frame-too-large', id: 2 })]);
  });

  it('does not take an "id" nested in params of an oversized frame for the frame id', async () => {
    const s = rawServer();
    s.input.write(
      `{"jsonrpc":"2.0","method":"echo","params":{"id":7,"text":"${'x'.repeat(1024 * 1024)}"}}\n`,
    );
    const frames = await s.waitForFrames(1);
    expect(frames[0]).toMatchObject({ id: null, error: { code: RPC_ERROR_CODES.frameTooLarge } });
  });

  it('answers an unknown method with -32601 and bad params with -32602 naming the field', async () => {
    const s = rawServer();
    s.input.write('{"jsonrpc":"2.0","id":1,"method":"nope","params":{}}\n');
    s.input.write('{"jsonrpc":"2.0","id":2,"method":"echo","params":{"text":"far too long for ten"}}\n');
    s.input.write('{"jsonrpc":"2.0","id":3,"method":"echo","params":{"text":"a","extra":1}}\n');
    s.input.write('{"jsonrpc":"2.0","id":4,"method":"__proto__","params":{}}\n');
    const frames = await s.waitForFrames(4);
    expect(frames[0]).toMatchObject({ id: 1, error: { code: -32601 } });
    expect(frames[1]).toMatchObject({ id: 2, error: { code: -32602 } });
    expect((frames[1]?.error as { message: string }).message).toMatch(/^invalid params for "echo": text: /);
    expect(frames[2]).toMatchObject({ id: 3, error: { code: -32602 } });
    expect((frames[2]?.error as { message: string }).message).toContain('extra');
    expect(frames[3]).toMatchObject({ id: 4, error: { code: -32601 } });
  });

  it('passes RpcError codes through, hides other errors behind -32603 and checks its own results', async () => {
    const s = rawServer();
    s.input.write('{"jsonrpc":"2.0","id":"a","method":"fail","params":{"kind":"rpc"}}\n');
    s.input.write('{"jsonrpc":"2.0","id":"b","method":"fail","params":{"kind":"plain"}}\n');
    s.input.write('{"jsonrpc":"2.0","id":"c","method":"fail","params":{"kind":"bad-result"}}\n');
    const frames = await s.waitForFrames(3);
    const byId = new Map(frames.map((f) => [f.id, f]));
    expect(byId.get('a')).toMatchObject({
      error: { code: RPC_ERROR_CODES.denied, message: 'no, because policy' },
    });
    expect(byId.get('b')).toMatchObject({ error: { code: RPC_ERROR_CODES.internal } });
    expect(JSON.stringify(byId.get('b'))).not.toContain('secret internal detail');
    expect(byId.get('c')).toMatchObject({ error: { code: RPC_ERROR_CODES.internal } });
  });

  it('runs notifications without replying, even when they are invalid', async () => {
    const seen: number[] = [];
    const s = rawServer(seen);
    s.input.write('{"jsonrpc":"2.0","method":"ping","params":{"n":5}}\n');
    s.input.write('{"jsonrpc":"2.0","method":"ping","params":{"n":"bad"}}\n');
    s.input.write('{"jsonrpc":"2.0","method":"unknown.notification","params":{}}\n');
    s.input.write('{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"x"}}\n');
    const frames = await s.waitForFrames(1);
    expect(frames).toEqual([{ jsonrpc: '2.0', id: 1, result: { text: 'X' } }]);
    expect(seen).toEqual([5]);
    expect(s.problems.map((p) => p.kind)).toEqual(['invalid-params', 'unknown-method']);
  });

  it('ignores responses for unknown ids and reports them', async () => {
    const s = rawServer();
    s.input.write('{"jsonrpc":"2.0","id":42,"result":{"ok":true}}\n');
    s.input.write('{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"x"}}\n');
    await s.waitForFrames(1);
    expect(s.problems).toEqual([expect.objectContaining({ kind: 'unknown-response-id', id: 42 })]);
  });
});

describe('createRpcPeer (two peers)', () => {
  it('matches concurrent requests to their responses, whatever order they finish in', async () => {
    const gate = gates();
    const { a } = connectedPair({}, {}, echoMethods, echoHandlers([], gate));
    const requests = [
      a.request('slow', { gate: 'last' }),
      a.request('echo', { text: 'first' }),
      a.request('slow', { gate: 'third' }),
      a.request('echo', { text: 'second' }),
    ] as const;
    // The echoes answer first, then the third request, and the first one last.
    await Promise.all([requests[1], requests[3]]);
    gate.open('third');
    await requests[2];
    gate.open('last');
    const results = await Promise.all(requests);
    expect(results).toEqual([{ done: true }, { text: 'FIRST' }, { done: true }, { text: 'SECOND' }]);
  });

  it('rejects with the typed RpcError the handler threw', async () => {
    const { a } = connectedPair({}, {}, echoMethods, echoHandlers());
    const error = await a.request('fail', { kind: 'rpc' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect((error as RpcError).code).toBe(RPC_ERROR_CODES.denied);
    expect((error as RpcError).isDenial).toBe(true);
  });

  it('refuses to send params that fail the schema', async () => {
    const { a } = connectedPair({}, {}, echoMethods, echoHandlers());
    await expect(a.request('echo', { text: 'this is longer than ten' })).rejects.toMatchObject({
      code: RPC_ERROR_CODES.invalidParams,
    });
  });

  it('validates results on the receiving side', async () => {
    // The serving side believes in a looser result schema than the caller does.
    const loose = {
      echo: { params: echoMethods.echo.params, result: z.object({ text: z.number() }).strict() },
    } as const;
    const aToB = new PassThrough();
    const bToA = new PassThrough();
    createRpcPeer({
      input: aToB,
      output: bToA,
      localMethods: loose,
      handlers: { echo: () => ({ text: 5 }) },
      remoteMethods: {},
    });
    const caller = createRpcPeer({
      input: bToA,
      output: aToB,
      localMethods: {},
      handlers: {},
      remoteMethods: { echo: echoMethods.echo },
    });
    await expect(caller.request('echo', { text: 'x' })).rejects.toThrow(/invalid result for "echo": text/);
  });

  it('rejects pending requests clearly when the input ends', async () => {
    const aToB = new PassThrough();
    const bToA = new PassThrough();
    let closedWith = '';
    const a = createRpcPeer({
      input: bToA,
      output: aToB,
      localMethods: {},
      handlers: {},
      remoteMethods: echoMethods,
      onClose: (reason) => (closedWith = reason),
    });
    const first = a.request('slow', { gate: 'never' });
    const second = a.request('echo', { text: 'x' });
    bToA.end();
    await expect(first).rejects.toBeInstanceOf(RpcConnectionClosedError);
    await expect(second).rejects.toThrow(/no reply to "echo": the input stream ended/);
    expect(closedWith).toBe('the input stream ended');
    await expect(a.request('echo', { text: 'x' })).rejects.toBeInstanceOf(RpcConnectionClosedError);
  });

  it('times out and honours abort signals', async () => {
    const { a } = connectedPair({}, {}, echoMethods, echoHandlers());
    await expect(a.request('slow', { gate: 'never' }, { timeoutMs: 5 })).rejects.toBeInstanceOf(
      RpcTimeoutError,
    );
    const controller = new AbortController();
    const pending = a.request('slow', { gate: 'never' }, { signal: controller.signal });
    controller.abort(new Error('run stopped'));
    await expect(pending).rejects.toThrow(/abandoned: run stopped/);
  });

  it('refuses to send a frame larger than the limit', async () => {
    const aToB = new PassThrough();
    const bToA = new PassThrough();
    const big = { echo: { params: z.object({ text: z.string() }).strict(), result: z.unknown() } } as const;
    const a = createRpcPeer({
      input: bToA,
      output: aToB,
      localMethods: {},
      handlers: {},
      remoteMethods: big,
      maxFrameBytes: 100,
    });
    await expect(a.request('echo', { text: 'y'.repeat(200) })).rejects.toMatchObject({
      code: RPC_ERROR_CODES.frameTooLarge,
    });
  });

  it('carries the real protocol tables end to end', async () => {
    const { a, b } = connectedPair(
      hostMethods,
      {
        'message.send': () => ({ queued: true as const }),
        'task.schedule': () => ({ taskId: 't1' }),
        'bash.ran': () => undefined,
        'file.read': () => undefined,
        'task.list': () => ({ tasks: [] }),
        'task.update': () => ({ ok: true as const }),
        'task.pause': () => ({ ok: true as const }),
        'task.resume': () => ({ ok: true as const }),
        'task.cancel': () => ({ ok: true as const }),
        'group.list': () => ({ groups: [] }),
        'group.register': () => ({ ok: true as const }),
        'security.bash_check': () => ({ decision: 'deny' as const, reason: 'network while tainted' }),
        'service.call': () => ({ result: { text: 'page' } }),
        'config.read': () => ({ text: '', hash: '0'.repeat(64) }),
        'config.propose': () => ({ status: 'denied' as const, detail: 'not approved' }),
        'memory.search': () => ({ hits: [] }),
        'memory.remember': () => ({ ref: 'note:1', path: 'memory/x.md' }),
        'memory.forget': () => ({ ok: true as const }),
        'run.done': () => ({ ok: true as const }),
      },
      agentMethods,
      {
        'run.start': () => ({ accepted: true as const }),
        'run.input': () => ({ accepted: false }),
        'run.stop': () => undefined,
      },
    );
    await expect(
      b.request('security.bash_check', { command: 'curl x', localReason: 'network' }),
    ).resolves.toEqual({
      decision: 'deny',
      reason: 'network while tainted',
    });
    await expect(b.request('message.send', { text: 'hi', to: 'Not A Group' })).rejects.toMatchObject({
      code: -32602,
    });
    const accepted = await a.request('run.input', {
      messages: [
        {
          id: 3,
          sender: 's',
          senderName: 'S',
          text: 'x',
          timestamp: '2025-01-01T00:00:00Z',
          fromAssistant: false,
        },
      ],
    });
    expect(accepted).toEqual({ accepted: false });
    await expect(a.request('run.stop', { reason: 'x' })).rejects.toThrow(/notification/);
  });
});
