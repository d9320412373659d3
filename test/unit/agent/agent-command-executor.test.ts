/**
 * The agent's side of the command executor (container-agent/src/executor/): what the executor says is read
 * as untrusted, and an executor that misbehaves or goes away costs the bash tool, never the agent.
 */
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { connectCommandExecutor } from '../../../container-agent/src/executor/client.ts';
import { executorCommands } from '../../../container-agent/src/executor/command-runner.ts';
import type { SeparationFacts } from '../../../container-agent/src/tools/process-isolation.ts';

function fakeExecutor() {
  const toAgent = new PassThrough();
  const fromAgent = new PassThrough();
  const requests: unknown[] = [];
  fromAgent.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) requests.push(JSON.parse(line));
  });
  const say = (reply: unknown) =>
    toAgent.write(`${typeof reply === 'string' ? reply : JSON.stringify(reply)}\n`);
  return { client: connectCommandExecutor({ input: toAgent, output: fromAgent }), say, requests, toAgent };
}

const run = (signal = new AbortController().signal) => ({
  command: 'echo hi',
  cwd: '/workspace/group',
  env: { PATH: '/usr/bin', UNSET: undefined },
  timeoutMs: 1000,
  maxOutputBytes: 64 * 1024,
  signal,
});
const result = {
  exitCode: 0,
  signal: null,
  stdout: 'hi\n',
  stderr: '',
  timedOut: false,
  aborted: false,
  omittedBytes: 0,
};

describe('the command executor client', () => {
  it('sends each command as one request line and answers with the result of its id', async () => {
    const { client, say, requests } = fakeExecutor();
    say({ type: 'hello', uid: 10002, gid: 10001 });
    expect(await client.identity).toEqual({ uid: 10002, gid: 10001 });
    const pending = client.run(run());
    await new Promise((resolve) => setImmediate(resolve));
    expect(requests).toEqual([
      {
        type: 'run',
        id: 0,
        command: 'echo hi',
        cwd: '/workspace/group',
        env: { PATH: '/usr/bin' },
        timeoutMs: 1000,
        maxOutputBytes: 64 * 1024,
      },
    ]);
    say({ type: 'result', id: 7, ...result, stdout: 'not yours' });
    say({ type: 'result', id: 0, ...result });
    expect(await pending).toEqual(result);
  });

  it('passes an abort on to the executor', async () => {
    const { client, say, requests } = fakeExecutor();
    const abort = new AbortController();
    const pending = client.run(run(abort.signal));
    abort.abort();
    await new Promise((resolve) => setImmediate(resolve));
    expect(requests.at(-1)).toEqual({ type: 'abort', id: 0 });
    say({ type: 'result', id: 0, ...result, aborted: true });
    expect(await pending).toMatchObject({ aborted: true });
  });

  it('gives up on an executor that says something malformed, for this command and every later one', async () => {
    const { client, say } = fakeExecutor();
    const pending = client.run(run());
    say({ type: 'result', id: 0, ...result, isAdmin: true });
    await expect(pending).rejects.toThrow('the command executor is gone (it sent a malformed line)');
    await expect(client.run(run())).rejects.toThrow(/is gone/);
    await expect(client.identity).rejects.toThrow(/is gone/);
  });

  it('fails pending commands when the executor ends, e.g. killed by a command', async () => {
    const { client, toAgent } = fakeExecutor();
    const pending = client.run(run());
    toAgent.end();
    await expect(pending).rejects.toThrow('the command executor is gone (its output ended)');
  });

  it('refuses an executor that claims to run as root', async () => {
    const { client, say, toAgent } = fakeExecutor();
    say({ type: 'hello', uid: 0, gid: 0 });
    await once(toAgent, 'close');
    await expect(client.identity).rejects.toThrow(/malformed/);
  });
});

describe('commands through the executor', () => {
  const facts = (commandUid: number): SeparationFacts => ({
    commandUid,
    launcherCommandUid: 10002,
    status: () =>
      'Uid:\t10001\t10001\t10001\t10001\n' +
      ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'].map((s) => `${s}:\t0000000000000000`).join('\n'),
    environOwner: () => 0,
    sessionFolder: () => ({ isDirectory: true, uid: 10001, mode: 0o40700 }),
  });

  it('checks the separation once the executor said who it is', async () => {
    const { client, say } = fakeExecutor();
    const commands = executorCommands(client, facts);
    say({ type: 'hello', uid: 10002, gid: 10001 });
    expect(await commands.separation()).toBeNull();
  });

  it('runs nothing when the executor is not the one the launcher started, or never says who it is', async () => {
    const impostor = fakeExecutor();
    impostor.say({ type: 'hello', uid: 10003, gid: 10001 });
    expect(await executorCommands(impostor.client, facts).separation()).toMatch(/not the uid 10002/);
    const silent = fakeExecutor();
    silent.toAgent.end();
    expect(await executorCommands(silent.client, facts).separation()).toMatch(/is gone/);
  });
});
