/**
 * The agent as a real Node process: spoken to over its stdin/stdout with the real rpc peer, calling a
 * real OpenAI-compatible HTTP server (the fake provider), writing real files.
 */
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  RPC_ERROR_CODES,
  agentMethods,
  hostMethods,
  type ChatMessage,
  type HostMethods,
  type ParamsOut,
  type RunStartParams,
} from '../../../container-agent/src/protocol.ts';
import { RpcError } from '../../../container-agent/src/rpc/errors.ts';
import { createRpcPeer, type ProtocolProblem } from '../../../container-agent/src/rpc/peer.ts';
import { reply, startFakeProvider, type FakeProvider } from '../../fakes/fake-provider.ts';
import { waitFor } from '../../helpers/processes.ts';

const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const GATEWAY_KEY = 'gw-integration-test-key';

let fake: FakeProvider;
let workspace: string;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  fake = await startFakeProvider({ apiKey: GATEWAY_KEY });
});
afterAll(async () => {
  await fake.close();
});
beforeEach(() => {
  workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-'));
});
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  fs.rmSync(workspace, { recursive: true, force: true });
});

interface HostSide {
  child: ChildProcessWithoutNullStreams;
  host: ReturnType<typeof createRpcPeer<HostMethods, typeof agentMethods>>;
  sent: Array<ParamsOut<HostMethods, 'message.send'>>;
  done: Promise<ParamsOut<HostMethods, 'run.done'>>;
  exited: Promise<number | null>;
  problems: ProtocolProblem[];
  stderr: () => string;
}

function startAgent(): HostSide {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join('container-agent', 'src', 'main.ts')], {
    cwd: projectRoot,
    env: {
      PATH: process.env.PATH,
      HOME: workspace,
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      CARAPACE_WORKSPACE: workspace,
      CARAPACE_MODEL: 'fake-model',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const sent: HostSide['sent'] = [];
  const problems: ProtocolProblem[] = [];
  let resolveDone!: (params: ParamsOut<HostMethods, 'run.done'>) => void;
  const done = new Promise<ParamsOut<HostMethods, 'run.done'>>((resolve) => (resolveDone = resolve));
  const refuse = (method: string) => () => {
    throw new RpcError(RPC_ERROR_CODES.forbidden, `${method} is not allowed in this test`);
  };
  const host = createRpcPeer({
    input: child.stdout,
    output: child.stdin,
    localMethods: hostMethods,
    remoteMethods: agentMethods,
    onProtocolError: (problem) => problems.push(problem),
    handlers: {
      'message.send': (params) => {
        sent.push(params);
        return { queued: true as const };
      },
      'run.done': (params) => {
        resolveDone(params);
        return { ok: true as const };
      },
      'bash.ran': () => undefined,
      'file.read': () => undefined,
      'security.bash_check': ({ command }) =>
        command.startsWith('echo $$ > pid.txt')
          ? { decision: 'allow' as const, reason: 'test command' }
          : { decision: 'deny' as const, reason: 'no other commands in this test' },
      'task.schedule': refuse('task.schedule'),
      'task.list': () => ({ tasks: [] }),
      'task.update': refuse('task.update'),
      'task.pause': refuse('task.pause'),
      'task.resume': refuse('task.resume'),
      'task.cancel': refuse('task.cancel'),
      'group.list': refuse('group.list'),
      'group.register': refuse('group.register'),
      'service.call': refuse('service.call'),
      'config.read': refuse('config.read'),
      'config.propose': refuse('config.propose'),
      'memory.search': refuse('memory.search'),
      'memory.remember': refuse('memory.remember'),
      'memory.forget': refuse('memory.forget'),
    },
  });
  return { child, host, sent, done, exited, problems, stderr: () => stderr };
}

const chat = (id: number, text: string): ChatMessage => ({
  id,
  sender: '4917',
  senderName: 'Ann',
  text,
  timestamp: '2025-03-01T09:59:00Z',
  fromAssistant: false,
});

const runStart = (runId: number, messages: ChatMessage[]): RunStartParams => ({
  runId,
  group: { id: 'family', name: 'Family', isAdmin: false, channel: 'telegram' },
  assistantName: 'Andy',
  timezone: 'Europe/Berlin',
  formatting: 'Plain text.',
  messages,
  limits: { maxToolSteps: 5, maxOutputTokens: 512, wallTimeMs: 60_000 },
  gatewayKey: GATEWAY_KEY,
});

/** Alive and not a zombie waiting to be reaped. */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  return !/^\d+ \(.*\) Z/.test(stat);
}

interface ChatBody {
  model: string;
  messages: Array<{
    role: string;
    content: string | null;
    tool_calls?: Array<{ function: { name: string } }>;
  }>;
  tools?: Array<{ function: { name: string } }>;
}

describe('agent process', () => {
  it('answers a run with a tool call, remembers it in the next run, and exits when stdin closes', async () => {
    // Run 1: the model writes a file, then answers.
    fake.script(
      reply.toolCalls([
        {
          id: 'call_w1',
          name: 'write_file',
          arguments: { path: 'notes/hello.txt', content: 'hello from the agent' },
        },
      ]),
      reply.text('I saved your note.'),
    );
    const first = startAgent();
    const before = fake.requests.length;
    expect(
      await first.host.request('run.start', runStart(1, [chat(10, '@Andy please save a note')])),
    ).toEqual({ accepted: true });
    const done1 = await first.done;
    expect(done1).toMatchObject({ status: 'ok', usage: { toolSteps: 1 } });
    expect(await first.exited).toBe(0);
    expect(first.sent).toEqual([{ text: 'I saved your note.', final: true }]);
    expect(fs.readFileSync(path.join(workspace, 'group', 'notes', 'hello.txt'), 'utf8')).toBe(
      'hello from the agent',
    );
    expect(first.problems).toEqual([]);

    const firstCalls = fake.requests.slice(before);
    expect(firstCalls).toHaveLength(2);
    expect(firstCalls[0]?.headers.authorization).toBe(`Bearer ${GATEWAY_KEY}`);
    const body1 = firstCalls[0]?.body as ChatBody;
    expect(body1.model).toBe('fake-model');
    expect(body1.tools?.map((t) => t.function.name)).toContain('write_file');
    expect(body1.messages[0]?.role).toBe('system');
    expect(body1.messages[1]?.content).toContain('please save a note');

    // Run 2, a new process: the conversation of run 1 comes back from the session folder.
    fake.script(reply.text('You asked me to save a note.'));
    const second = startAgent();
    const beforeSecond = fake.requests.length;
    await second.host.request(
      'run.start',
      runStart(2, [chat(10, '@Andy please save a note'), chat(11, '@Andy what did I ask?')]),
    );
    expect((await second.done).status).toBe('ok');
    expect(await second.exited).toBe(0);
    const body2 = fake.requests[beforeSecond]?.body as ChatBody;
    const roles = body2.messages.map((m) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);
    expect(body2.messages[2]?.tool_calls?.[0]?.function.name).toBe('write_file');
    expect(body2.messages[4]?.content).toBe('I saved your note.');
    // Message 10 was taken in by run 1; only 11 is new.
    expect(body2.messages[5]?.content).toContain('what did I ask?');
    expect(body2.messages[5]?.content).not.toContain('please save a note');

    // Run 3: the model hangs; the host goes away; the agent must not live on.
    fake.script(reply.hang());
    const third = startAgent();
    const beforeThird = fake.requests.length;
    await third.host.request('run.start', runStart(3, [chat(12, '@Andy think hard')]));
    const [hanging] = (await fake.waitForRequests(beforeThird + 1)).slice(beforeThird);
    third.child.stdin.end();
    expect(await third.exited).toBe(2);
    await fake.waitForAbort(hanging as NonNullable<typeof hanging>);
    expect(third.stderr()).toContain('connection to the host closed');
  });

  it('runs no command when it was not started by the launcher: commands never run as the agent', async () => {
    fake.script(
      reply.toolCalls([{ id: 'call_b1', name: 'bash', arguments: { command: 'echo ran > ran.txt' } }]),
      reply.text('could not'),
    );
    const agent = startAgent();
    await agent.host.request('run.start', runStart(1, [chat(1, '@Andy try a command')]));
    expect(await agent.done).toMatchObject({ status: 'ok' });
    expect(fs.existsSync(path.join(workspace, 'group', 'ran.txt'))).toBe(false);
    const last = fake.requests.at(-1)?.body as ChatBody;
    const toolResult = last.messages.find((m) => m.role === 'tool');
    expect(toolResult?.content).toMatch(/not started by the launcher/);
    agent.child.stdin.end();
    await agent.exited;
  });

  it("kills a running command when the agent goes away (the executor's stdin closes)", async () => {
    const executor = spawn(
      process.execPath,
      ['--import', 'tsx', path.join('container-agent', 'src', 'executor', 'main.ts')],
      { cwd: projectRoot, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const exited = once(executor, 'exit').then(([code]) => code as number | null);
    const groupDir = path.join(workspace, 'group');
    fs.mkdirSync(groupDir, { recursive: true });
    // The command's shell tells its pid through a FIFO: reading it returns once the command wrote it.
    const pidFifo = path.join(groupDir, 'pid.fifo');
    execFileSync('mkfifo', [pidFifo]);
    executor.stdin.write(
      JSON.stringify({
        type: 'run',
        id: 1,
        command: 'echo $$ > pid.fifo; exec sleep 300',
        cwd: groupDir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        timeoutMs: 300_000,
        maxOutputBytes: 1024,
      }) + '\n',
    );
    const pid = Number((await fs.promises.readFile(pidFifo, 'utf8')).trim());
    expect(isRunning(pid)).toBe(true);
    executor.stdin.end();
    expect(await exited).toBe(0);
    // Killed by the executor; reaped by whoever inherits it, which is another process's doing.
    await waitFor('the command gone', () => !isRunning(pid));
  });

  it('keeps stdout for frames only and answers protocol errors without dying', async () => {
    const agent = startAgent();
    const replies: string[] = [];
    agent.child.stdout.on('data', (chunk: Buffer) => replies.push(chunk.toString('utf8')));
    agent.child.stdin.write('definitely not json\n');
    agent.child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 'x1', method: 'run.launch', params: {} })}\n`,
    );
    await expect(agent.host.request('run.input', { messages: [chat(1, 'x')] })).rejects.toMatchObject({
      code: RPC_ERROR_CODES.runNotActive,
    });
    const frames = replies
      .join('')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { id: unknown; error?: { code: number } });
    expect(frames.find((f) => f.id === null)?.error?.code).toBe(RPC_ERROR_CODES.parseError);
    expect(frames.find((f) => f.id === 'x1')?.error?.code).toBe(RPC_ERROR_CODES.methodNotFound);
    // The host side saw replies to ids it never used; nothing else.
    expect(
      agent.problems.every((p) => p.kind === 'unknown-response-id' || p.kind === 'error-without-id'),
    ).toBe(true);
    expect(agent.stderr()).toContain('"msg":"agent ready"');
    agent.child.stdin.end();
    expect(await agent.exited).toBe(2);
  });
});
