import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { runCli } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

function folders(websocketUrl = 'ws://127.0.0.1:9/ws') {
  const root = tempDir();
  const dirs = { configDir: path.join(root, 'config'), dataDir: path.join(root, 'data') };
  fs.mkdirSync(dirs.configDir);
  fs.writeFileSync(
    path.join(dirs.configDir, 'config.toml'),
    `[channels.whatsapp]\nwebsocket_url = "${websocketUrl}"\n`,
  );
  return dirs;
}

it('refuses a bad --phone or --timeout with exit 2 and a message, before taking the data folder', async () => {
  const dirs = folders();
  for (const [args, problem] of [
    [['--phone', '+49 151 234'], /--phone takes digits with the country code/],
    [['--timeout', 'soon'], /--timeout takes whole seconds/],
  ] as const) {
    const r = await runCli(dirs, ['whatsapp', 'login', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(problem);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  }
  expect(fs.existsSync(path.join(dirs.dataDir, 'host.lock'))).toBe(false);
});

it('gives up at its time limit against a server that never completes the link: progress first, one line, exit 1', async () => {
  // A server that accepts the connection and never says anything: the WhatsApp handshake never completes.
  const server = net.createServer(() => undefined);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const r = await runCli(folders(`ws://127.0.0.1:${port}/ws`), ['whatsapp', 'login', '--timeout', '2']);
  expect(r.code).toBe(1);
  expect(r.stdout).toContain('gives up after 2 s');
  expect(r.stderr).toMatch(/^WhatsApp login failed: /);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}, 30_000);
