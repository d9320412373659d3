import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatModel, CompletionRequest } from '../../../container-agent/src/llm/chat-model.ts';
import { scriptedChatModel, type ScriptStep } from '../../fakes/scripted-chat-model.ts';
import { createStderrLogger } from '../../../container-agent/src/logging/stderr-logger.ts';
import {
  RPC_ERROR_CODES,
  agentMethods,
  hostMethods,
  type ChatMessage,
  type HostMethods,
  type RunStartParams,
} from '../../../container-agent/src/protocol.ts';
import { RpcError } from '../../../container-agent/src/rpc/errors.ts';
import { createRpcPeer, type RpcHandlers } from '../../../container-agent/src/rpc/peer.ts';
import { createRunController } from '../../../container-agent/src/run/run-controller.ts';
import { inProcessCommands } from '../../helpers/in-process-commands.ts';

const scriptedModel = (steps: ScriptStep[]) =>
  scriptedChatModel(steps, { promptTokens: 7, completionTokens: 3 });

/** The real protocol over in-memory streams: a host that records calls, and the controller behind an agent peer. */
function harness(
  model: ChatModel,
  options: {
    defaultModel?: string;
    host?: Partial<RpcHandlers<HostMethods>>;
    /** Records the run's command side as it starts (run/command-start.ts). */
    commandSide?: string[];
  } = {},
) {
  const calls: Array<{ method: string; params: unknown }> = [];
  const toHost = new PassThrough();
  const toAgent = new PassThrough();
  const hostHandlers = {} as Record<string, (params: unknown) => unknown>;
  const defaults: Partial<Record<string, () => unknown>> = {
    'message.send': () => ({ queued: true }),
    'run.done': () => ({ ok: true }),
  };
  for (const method of Object.keys(hostMethods)) {
    hostHandlers[method] = (params) => {
      calls.push({ method, params });
      const handler =
        (options.host as Record<string, ((p: unknown) => unknown) | undefined> | undefined)?.[method] ??
        defaults[method];
      if (!handler) throw new RpcError(RPC_ERROR_CODES.methodNotFound, `${method} is not part of this test`);
      return handler(params);
    };
  }
  const host = createRpcPeer({
    input: toHost,
    output: toAgent,
    localMethods: hostMethods,
    handlers: hostHandlers as never,
    remoteMethods: agentMethods,
  });
  const exits: number[] = [];
  const gatewayKeys: string[] = [];
  const handlers = {} as RpcHandlers<typeof agentMethods>;
  const agentPeer = createRpcPeer({
    input: toAgent,
    output: toHost,
    localMethods: agentMethods,
    handlers,
    remoteMethods: hostMethods,
  });
  const controller = createRunController({
    host: agentPeer,
    createModel: (gatewayKey) => {
      gatewayKeys.push(gatewayKey);
      return model;
    },
    classifier: { classify: () => ({ class: 'local', reason: 'test', network: false }) },
    settings: {
      workspaceRoot: workspace,
      ...(options.defaultModel !== undefined
        ? { defaultModel: options.defaultModel }
        : { defaultModel: 'env-model' }),
      bashCheckTimeoutMs: 1000,
      historyTokens: 40_000,
      commandHome: workspace,
      processEnv: process.env,
    },
    now: () => new Date('2025-03-01T10:00:00Z'),
    logger: createStderrLogger({ write: () => {} }),
    exit: (code) => exits.push(code),
    ripgrep: async () => null,
    commands: options.commandSide
      ? {
          run: (o) => {
            options.commandSide?.push('command');
            return inProcessCommands.run(o);
          },
          separation: () => {
            options.commandSide?.push('separation');
            return inProcessCommands.separation();
          },
        }
      : inProcessCommands,
    ...(options.commandSide ? { onCommandsStart: () => options.commandSide?.push('parser') } : {}),
    createNonce: () => 'n0nce',
  });
  Object.assign(handlers, controller.handlers);
  return { host, calls, exits, gatewayKeys, finished: controller.finished };
}

const chat = (id: number, text: string): ChatMessage => ({
  id,
  sender: '4917',
  senderName: 'Ann',
  text,
  timestamp: '2025-03-01T09:59:00Z',
  fromAssistant: false,
});

const start = (messages: ChatMessage[], extra: Partial<RunStartParams> = {}): RunStartParams => ({
  runId: 1,
  group: { id: 'family', name: 'Family', isAdmin: false, channel: 'telegram' },
  assistantName: 'Andy',
  timezone: 'Europe/Berlin',
  formatting: 'Plain text only.',
  messages,
  limits: { maxToolSteps: 5, maxOutputTokens: 500, wallTimeMs: 60_000 },
  gatewayKey: 'gw-run-controller-test-key',
  ...extra,
});

let tmp: string;
let workspace: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
  workspace = path.join(tmp, 'workspace');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

const historyLines = () =>
  fs
    .readFileSync(path.join(workspace, 'session', 'history.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { message: { role: string } }).message);

describe('run controller', () => {
  it('acknowledges after storing the messages, answers, and reports run.done', async () => {
    fs.mkdirSync(path.join(workspace, 'group'), { recursive: true });
    fs.writeFileSync(path.join(workspace, 'group', 'AGENT.md'), 'Ann likes short answers.');
    const { model, requests } = scriptedModel([{ content: 'Hi Ann!' }]);
    const h = harness(model);
    expect(await h.host.request('run.start', start([chat(5, 'hi @Andy')], { model: 'run-model' }))).toEqual({
      accepted: true,
    });
    // The ack means the messages are in the stored conversation.
    expect(historyLines()).toEqual([expect.objectContaining({ role: 'user', chatIds: [5] })]);
    expect(await h.finished).toBe(0);
    expect(h.exits).toEqual([0]);
    expect(h.calls).toEqual([
      { method: 'message.send', params: { text: 'Hi Ann!', final: true } },
      {
        method: 'run.done',
        params: { status: 'ok', usage: { promptTokens: 7, completionTokens: 3, toolSteps: 0 } },
      },
    ]);
    const request = requests[0] as CompletionRequest;
    expect(request.model).toBe('run-model');
    const system = request.messages[0]?.content ?? '';
    expect(system).toContain('You are Andy');
    expect(system).toContain('Ann likes short answers.');
    expect(system).toContain('Plain text only.');
    expect(system).toContain('Saturday, 2025-03-01 11:00:00 in Europe/Berlin (UTC+01:00)');
    expect(request.messages[1]?.content).toBe(
      '<chat_messages source="untrusted chat participants" nonce="n0nce">\n' +
        '{"id":5,"time":"2025-03-01 10:59:00 +01:00","from":"Ann","senderId":"4917","text":"hi @Andy"}\n' +
        '</chat_messages nonce="n0nce">',
    );
    expect(request.tools.map((t) => t.name)).not.toContain('register_group');
    expect(historyLines().map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('talks to the model with the key from run.start, which no command can see', async () => {
    const { model, requests } = scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'bash', arguments: JSON.stringify({ command: 'env' }) }] },
      { content: 'checked' },
    ]);
    const h = harness(model);
    await h.host.request(
      'run.start',
      start([chat(5, 'env please @Andy')], { gatewayKey: 'gw-only-in-memory' }),
    );
    expect(await h.finished).toBe(0);
    expect(h.gatewayKeys).toEqual(['gw-only-in-memory']);
    const toolResult = requests[1]?.messages.find((m) => m.role === 'tool')?.content ?? '';
    expect(toolResult).toMatch(/^PATH=/m);
    expect(toolResult).not.toContain('gw-only-in-memory');
    expect(JSON.stringify(process.env)).not.toContain('gw-only-in-memory');
    expect(fs.readFileSync(path.join(workspace, 'session', 'history.jsonl'), 'utf8')).not.toContain(
      'gw-only-in-memory',
    );
  });

  it('starts no command side for a run answered in text at once', async () => {
    const commandSide: string[] = [];
    const { model } = scriptedModel([{ content: 'Noted.' }]);
    const h = harness(model, { commandSide });
    await h.host.request('run.start', start([chat(5, 'please note this')]));
    expect(await h.finished).toBe(0);
    expect(h.calls.map((c) => c.method)).toEqual(['message.send', 'run.done']);
    expect(commandSide).toEqual([]);
  });

  it('starts the command side once the model asks for a command, before the command runs', async () => {
    const commandSide: string[] = [];
    const { model } = scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'bash', arguments: JSON.stringify({ command: 'echo hi' }) }] },
      { content: 'Done.' },
    ]);
    const h = harness(model, { commandSide });
    await h.host.request('run.start', start([chat(5, 'run echo')]));
    expect(await h.finished).toBe(0);
    expect(commandSide.slice(0, 2)).toEqual(['separation', 'parser']);
    expect(commandSide).toContain('command');
    expect(commandSide.filter((step) => step === 'parser')).toHaveLength(1);
  });

  it('takes in a retried message once and does not answer an answered conversation again', async () => {
    const first = harness(scriptedModel([{ content: 'one' }]).model);
    await first.host.request('run.start', start([chat(5, 'hi')]));
    await first.finished;
    const second = scriptedModel([]);
    const retry = harness(second.model);
    await retry.host.request('run.start', start([chat(5, 'hi')]));
    expect(await retry.finished).toBe(0);
    expect(second.requests).toHaveLength(0);
    expect(retry.calls.map((c) => c.method)).toEqual(['run.done']);
    expect(historyLines().map((m) => m.role)).toEqual(['user', 'assistant']);
  });

  it('does not post the final answer twice when the model already sent it', async () => {
    const { model } = scriptedModel([
      { toolCalls: [{ id: 'c1', name: 'send_message', arguments: '{"text":"Done."}' }] },
      { content: 'Done.' },
    ]);
    const h = harness(model);
    await h.host.request('run.start', start([chat(1, 'do it')]));
    await h.finished;
    expect(h.calls.filter((c) => c.method === 'message.send')).toHaveLength(1);
  });

  it('takes follow-ups during the run and refuses them once finished', async () => {
    const late: { h?: ReturnType<typeof harness> } = {};
    const { model, requests } = scriptedModel([
      async () => {
        const host = (late.h as ReturnType<typeof harness>).host;
        expect(await host.request('run.input', { messages: [chat(2, 'one more thing')] })).toEqual({
          accepted: true,
        });
        // Already taken in: acknowledged again without a second copy.
        expect(await host.request('run.input', { messages: [chat(2, 'one more thing')] })).toEqual({
          accepted: true,
        });
        return { content: 'first' };
      },
      { content: 'second' },
    ]);
    const h = harness(model);
    late.h = h;
    await h.host.request('run.start', start([chat(1, 'hello')]));
    await h.finished;
    expect(requests[1]?.messages.filter((m) => m.role === 'user')).toHaveLength(2);
    expect(await h.host.request('run.input', { messages: [chat(3, 'late')] })).toEqual({ accepted: false });
  });

  it('rejects run.input before run.start and a second run.start', async () => {
    const h = harness(scriptedModel([{ content: 'x' }]).model);
    await expect(h.host.request('run.input', { messages: [chat(1, 'x')] })).rejects.toMatchObject({
      code: RPC_ERROR_CODES.runNotActive,
    });
    await h.host.request('run.start', start([chat(1, 'x')]));
    await expect(h.host.request('run.start', start([chat(2, 'y')]))).rejects.toMatchObject({
      code: RPC_ERROR_CODES.invalidRequest,
    });
    await h.finished;
  });

  it('refuses to start without a model', async () => {
    const h = harness(scriptedModel([]).model, { defaultModel: '' });
    await expect(h.host.request('run.start', start([chat(1, 'x')]))).rejects.toThrow(/no model/);
  });

  it('reports model failures and run.stop as run.done errors and exits 1', async () => {
    const failing = harness(
      scriptedModel([
        { toolCalls: [{ id: 'c1', name: 'list_files', arguments: '{}' }] },
        () => Promise.reject(new Error('gateway said 503')),
      ]).model,
    );
    await failing.host.request('run.start', start([chat(1, 'x')]));
    expect(await failing.finished).toBe(1);
    expect(failing.exits).toEqual([1]);
    // Usage up to the failure is still reported, for the host's accounting.
    expect(failing.calls.at(-1)).toEqual({
      method: 'run.done',
      params: {
        status: 'error',
        error: 'gateway said 503',
        usage: { promptTokens: 7, completionTokens: 3, toolSteps: 1 },
      },
    });

    fs.rmSync(workspace, { recursive: true, force: true });
    const late: { stopped?: ReturnType<typeof harness> } = {};
    const hanging = scriptedModel([
      (request) =>
        new Promise((_, reject) => {
          request.signal.addEventListener('abort', () => reject(new Error('aborted')));
          late.stopped?.host.notify('run.stop', { reason: 'owner cancelled' });
        }),
    ]);
    const stopped = harness(hanging.model);
    late.stopped = stopped;
    await stopped.host.request('run.start', start([chat(1, 'x')]));
    expect(await stopped.finished).toBe(1);
    expect(stopped.exits).toEqual([1]);
    expect(stopped.calls.at(-1)).toEqual({
      method: 'run.done',
      params: expect.objectContaining({ status: 'error', error: 'stopped by the host: owner cancelled' }),
    });
  });

  it("offers admin tools and marks admin messages as the owner's", async () => {
    const { model, requests } = scriptedModel([{ content: 'ok' }]);
    const h = harness(model);
    await h.host.request(
      'run.start',
      start([chat(1, 'x')], { group: { id: 'main', name: 'Main', isAdmin: true, channel: 'local' } }),
    );
    await h.finished;
    expect(requests[0]?.tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(['register_group', 'list_groups']),
    );
    expect(requests[0]?.messages[1]?.content).toContain('source="admin chat (the owner)"');
  });
});
