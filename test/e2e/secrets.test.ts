/**
 * The real provider key stays in the host, and the per-run gateway key stays in the agent's memory: a
 * run's container environment, its processes' environments, its mounts, the data folder, the host's log
 * and the container's side of the IPC stream hold neither. (That the gateway key is issued with run.start
 * and refused once the run is over is shown with a real gateway in test/integration/prestart-pool.test.ts.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough, type Duplex } from 'node:stream';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { byGroup, createGate, turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

/**
 * Regular files under `root`, skipping dependency and VCS folders (nothing of a run writes there). Files
 * that vanish meanwhile are skipped: others may be editing the project folder the admin group mounts.
 */
function filesUnder(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      // A mount of a single file (the empty file bound over a hidden one): the file itself.
      if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return void out.push(dir);
      throw err;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== '.git') walk(full);
      } else if (entry.isFile()) out.push(full);
    }
  };
  walk(root);
  return out;
}

/** The file's bytes, or nothing when it went away meanwhile (others may edit the mounted project). */
function readIfThere(file: string): Buffer {
  try {
    return fs.readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return Buffer.alloc(0);
    throw err;
  }
}

/** The shape of a gateway key (`gw-` and 256 random bits in base64url). */
const GATEWAY_KEY = /gw-[A-Za-z0-9_-]{43}/;

function gatewayStatus(baseUrl: string, key: string): Promise<number> {
  return fetch(`${baseUrl}/models`, { headers: { authorization: `Bearer ${key}` } }).then(async (res) => {
    await res.arrayBuffer();
    return res.status;
  });
}

await describeDocker('e2e: the provider key never reaches a container', () => {
  let h: E2eHost;

  beforeAll(async () => {
    h = await startE2eHost();
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it('containers, their processes, mounts, files, logs and IPC hold neither the provider key nor a gateway key', async () => {
    const key = h.providerKey;
    const gate = createGate();
    h.fake.setResponder(
      byGroup({
        main: turnResponder(
          async () => {
            await gate.opened;
            // Every process's environment in the container (the init, the agent, this command's shell),
            // then the environment commands get.
            return reply.toolCalls([
              {
                name: 'bash',
                arguments: {
                  command: "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done; echo ---; env",
                },
              },
            ]);
          },
          (t) => reply.text(`environment checked (${t.toolResults.length} result)`),
        ),
      }),
    );

    const sent = h.send('main', 'please show me your environment');
    await h.waitForRequest(() => true);
    const box = await h.runningContainer('main');
    const env = box.Config.Env;
    for (const entry of env) expect(entry).not.toContain(key);
    expect(env.join('\n')).not.toMatch(GATEWAY_KEY);
    expect(env.some((e) => e.startsWith('OPENAI_API_KEY='))).toBe(false);
    const baseUrl = env.find((e) => e.startsWith('OPENAI_BASE_URL='))?.slice('OPENAI_BASE_URL='.length) ?? '';
    expect(baseUrl).toMatch(/^http:\/\/[\d.]+:\d+\/v1$/);

    // The container's side of the IPC stream from here on (it keeps no logs to replay): its stdout.
    const attached = (await h.docker.getContainer(box.Id).attach({
      stream: true,
      stdout: true,
      stderr: true,
    })) as Duplex;
    const frames = new PassThrough();
    const agentLog = new PassThrough();
    let framesText = '';
    let agentLogText = '';
    frames.on('data', (c: Buffer) => (framesText += c.toString('utf8')));
    agentLog.on('data', (c: Buffer) => (agentLogText += c.toString('utf8')));
    h.docker.modem.demuxStream(attached, frames, agentLog);
    const attachEnded = new Promise<void>((resolve) => {
      attached.once('end', resolve);
      attached.once('close', resolve);
    });

    gate.open();

    const result = await sent;
    expect(result.stdout).toBe('environment checked (1 result)\n');
    expect(result.code).toBe(0);
    await attachEnded;

    // A made-up key and the real provider key never work at the gateway.
    expect(await gatewayStatus(baseUrl, `gw-${'A'.repeat(43)}`)).toBe(401);
    expect(await gatewayStatus(baseUrl, key)).toBe(401);

    // The provider saw the real key in Authorization only, and never the gateway key.
    const requests = h.requestsOf('main');
    expect(requests).toHaveLength(2);
    for (const r of h.fake.requests) {
      expect(r.headers.authorization).toBe(`Bearer ${key}`);
      for (const [name, value] of Object.entries(r.headers))
        if (name !== 'authorization') expect(String(value)).not.toContain(key);
      expect(JSON.stringify(r.headers)).not.toMatch(GATEWAY_KEY);
      expect(r.rawBody).not.toContain(key);
    }
    // What the container itself could see went back to the model: its own shells' environments, without
    // any key; the init's and the agent's run under another uid (and are not dumpable), so their variables
    // (OPENAI_BASE_URL among them) never show.
    const toolOutput = requests[1]?.rawBody ?? '';
    expect(toolOutput).toContain('Permission denied');
    expect(toolOutput).not.toContain('OPENAI_BASE_URL=');
    expect(toolOutput).not.toMatch(GATEWAY_KEY);
    const commandEnv = (JSON.parse(toolOutput) as { messages: { role: string; content: string }[] }).messages
      .filter((m) => m.role === 'tool')
      .map((m) => m.content.split('\n---\n')[1] ?? '')
      .join('');
    expect(commandEnv).toMatch(/^PATH=/m);
    expect(commandEnv).not.toContain('OPENAI_API_KEY');

    // The container's stdout frames and stderr log.
    expect(framesText).toContain('"method":"message.send"');
    expect(framesText).toContain('"method":"run.done"');
    expect(framesText).not.toContain(key);
    expect(framesText).not.toMatch(GATEWAY_KEY);
    expect(agentLogText).toContain('run finished');
    expect(agentLogText).not.toContain(key);
    expect(agentLogText).not.toMatch(GATEWAY_KEY);

    // The host's log: neither key, though it logged the run.
    const log = h.logText();
    expect(log).toContain('gateway: request done');
    expect(log).not.toContain(key);
    expect(log).not.toMatch(GATEWAY_KEY);

    // Files: the data folder (database included) and every folder the container had mounted.
    const roots = [h.paths.dataDir, ...box.Mounts.map((m) => m.Source)];
    expect(box.Mounts.map((m) => m.Destination)).toEqual(
      expect.arrayContaining(['/workspace/group', '/workspace/session']),
    );
    const files = [...new Set(roots.flatMap(filesUnder))];
    expect(files).toContain(h.paths.databaseFile);
    const needle = Buffer.from(key);
    const leaking = files.filter((f) => readIfThere(f).includes(needle));
    expect(leaking).toEqual([]);
    // Nor any gateway key in the data folder (the project the admin group mounts holds test sources).
    const withGatewayKey = filesUnder(h.paths.dataDir).filter((f) =>
      GATEWAY_KEY.test(readIfThere(f).toString('latin1')),
    );
    expect(withGatewayKey).toEqual([]);
    // The key does live in the host's own .env, outside everything above.
    expect(fs.readFileSync(h.paths.envFile, 'utf8')).toContain(key);
    expect(files).not.toContain(h.paths.envFile);
  }, 120_000);
});
