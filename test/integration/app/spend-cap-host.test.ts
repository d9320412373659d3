/**
 * The daily spend cap as the group and the owner live it, on a real host with the real gateway and the
 * real CLI (DESIGN.md, "LLM gateway"): the run that crosses the cap delivers its answer and nothing else;
 * the next message is refused without a run, with the cap's one line; a `carapace send` refused at the
 * cap says so, naming the group, the cap and the setting, and exits 1. The container plays no part in
 * this, so the runs are in process (test/fakes/gateway-runner.ts); the real agent meets the cap in
 * test/e2e/gateway-spend-cap.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { EXAMPLE_CONFIG_FILE } from '../../../host/cli/cli-context.ts';
import { loadConfig } from '../../../host/config/load-config.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { startFakeProvider, reply, type FakeProvider } from '../../fakes/fake-provider.ts';
import { gatewayRunnerFactory } from '../../fakes/gateway-runner.ts';
import { runCli } from '../../helpers/processes.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { runChat } from '../../../host/cli/chat-repl.ts';

// $1 per million tokens in and out: a token costs one micro-dollar, the cap 10 000 of them.
const CAP_USD = 0.01;
const CAP_LINE = 'This group reached its daily spending limit; I cannot answer until tomorrow.';
const REFUSED =
  'not answered: daily spend cap of $0.01 reached for group family; raise [gateway].daily_cap_usd or wait until tomorrow';

describe('a group at its daily spend cap, through the real host and CLI', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let host: RunningHost;
  let fake: FakeProvider;
  let socketFile: string;

  beforeAll(async () => {
    // One answer is dearer than the whole day's cap: the first request admitted crosses it.
    fake = await startFakeProvider({
      responder: () =>
        reply.text('Pasta at eight.', { usage: { promptTokens: 9_000, completionTokens: 3_000 } }),
    });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-cap-'));
    env = { CARAPACE_CONFIG_DIR: path.join(dir, 'cfg'), CARAPACE_DATA_DIR: path.join(dir, 'data') };
    fs.mkdirSync(env.CARAPACE_CONFIG_DIR as string);
    fs.writeFileSync(
      path.join(env.CARAPACE_CONFIG_DIR as string, 'config.toml'),
      [
        '[provider]',
        `base_url = "${fake.openaiBaseUrl}"`,
        'model = "fake-model"',
        '[gateway]',
        `daily_cap_usd = ${CAP_USD}`,
        '[gateway.prices]',
        '"fake-model" = { input_per_mtok_usd = 1, output_per_mtok_usd = 1 }',
        '[runs]',
        'max_attempts = 1',
      ].join('\n'),
    );
    const paths = resolvePaths({ env, cwd: dir });
    socketFile = paths.socketFile;
    host = await startHost({
      paths,
      config: loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE }),
      createRunner: gatewayRunnerFactory(),
      logger: pino({ level: 'silent' }),
      redact: (s) => s,
    });
    expect((await runCli(['groups', 'add', 'family', '--channel', 'local'], env)).code).toBe(0);
  });
  afterAll(async () => {
    await host?.stop();
    await fake?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const db = () => host.store.db;
  const chat = (group: string) =>
    db()
      .prepare<[string], { key: string; text: string }>(
        'SELECT idempotency_key AS key, text FROM outbox WHERE group_id = ? ORDER BY id',
      )
      .all(group)
      .map((row) => row.text);
  const runs = () =>
    db().prepare<[], { n: number }>("SELECT COUNT(*) AS n FROM runs WHERE group_id = 'family'").get()?.n;
  const asked = () => fake.requests.filter((r) => r.api === 'chat').length;

  it('delivers the answer of the run that crossed the cap, and no line about the cap with it', async () => {
    const res = await runCli(['send', '--group', 'family', '@Andy what is for dinner?'], env);
    expect(res.stdout).toBe('Pasta at eight.\n');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(chat('family')).toEqual(['Pasta at eight.']);
    const spent = db()
      .prepare<[], { micros: number }>(
        "SELECT SUM(cost_micros) AS micros FROM gateway_usage WHERE group_id = 'family'",
      )
      .get()?.micros;
    expect(spent).toBeGreaterThanOrEqual(CAP_USD * 1_000_000);
    // The owner hears of the crossing at once, as a warning; the group does not.
    expect(chat('main')).toEqual([
      expect.stringMatching(
        /^Spend: group family has spent \$0\.0120 of its daily spend cap of \$0\.0100 today \(120 %\)/,
      ),
    ]);
  });

  it('refuses the next message without a run: one line to the group, one notice to the owner, and the CLI says so', async () => {
    const res = await runCli(['send', '--group', 'family', '@Andy and dessert?'], env);
    expect(res.stdout).toBe(`${CAP_LINE}\n`);
    expect(res.stderr).toContain(REFUSED);
    expect(res.code).toBe(1);
    expect(runs()).toBe(1);
    expect(asked()).toBe(1);
    expect(chat('family')).toEqual(['Pasta at eight.', CAP_LINE]);
    expect(chat('main').slice(1)).toEqual([
      'Group family gets no answers until tomorrow: daily spend cap of $0.01 reached for group family; ' +
        'raise [gateway].daily_cap_usd or wait until tomorrow.',
    ]);
  });

  it('refuses every later message the same day: no second line in the chat, but each CLI send says so', async () => {
    const res = await runCli(['send', '--group', 'family', '@Andy hello?'], env);
    expect(res.stdout).toBe('');
    expect(res.stderr).toContain(REFUSED);
    expect(res.code).toBe(1);
    expect(runs()).toBe(1);
    expect(asked()).toBe(1);
    expect(chat('family')).toEqual(['Pasta at eight.', CAP_LINE]);
    expect(chat('main')).toHaveLength(2);
  });

  it('tells the chat console of a refused message too, though the chat has had its line today', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    let printed = '';
    const refusal = new Promise<void>((resolve) =>
      output.on('data', (chunk: Buffer) => {
        printed += chunk.toString();
        if (printed.includes('(not answered')) resolve();
      }),
    );
    const session = runChat({
      client: createLocalClient(socketFile),
      group: 'family',
      input,
      output,
      assistantName: 'Andy',
    });
    input.write('@Andy is anyone there?\n');
    await refusal;
    input.end();
    await session;
    expect(printed).toContain(`(${REFUSED})\n`);
    expect(runs()).toBe(1);
    expect(chat('family')).toHaveLength(2);
  });

  it('keeps the admin group on its own budget, and tells the owner there when it is refused', async () => {
    const first = await runCli(['send', '--group', 'main', 'hello'], env);
    // Its own run crossed its cap: the owner's warning, then the answer, which still arrives.
    expect(first.stdout).toMatch(/^Spend: group main has spent \$0\.0120 .*\nPasta at eight\.\n$/);
    expect(first.code).toBe(0);
    const second = await runCli(['send', '--group', 'main', 'and now?'], env);
    expect(second.stdout).toBe(
      'The admin group reached its daily LLM spending cap, so I cannot answer until tomorrow: ' +
        'daily spend cap of $0.01 reached for group main; raise [gateway].daily_cap_usd or wait until tomorrow.\n',
    );
    expect(second.stderr).toContain('not answered: daily spend cap of $0.01 reached for group main');
    expect(second.code).toBe(1);
    expect(asked()).toBe(2);
  });
});
