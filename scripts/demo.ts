/**
 * `npm run demo`: one full turn without a real LLM provider. It starts a fake OpenAI-compatible provider
 * on loopback, a host on a temporary config and data folder with the real container runtime, sends one
 * message through the local console and prints what came back, then cleans up.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLocalClient } from '../host/channels/local/local-client.ts';
import { sendAndWait } from '../host/channels/local/send-and-wait.ts';
import { startProductionHost } from '../host/app/production-host.ts';
import { startFakeProvider } from '../test/fakes/fake-provider.ts';
import { demoResponder } from '../test/fakes/demo-responder.ts';
import { fakeProviderHostSetup } from '../test/fakes/fake-provider-host-setup.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-demo-'));
const providerKey = 'sk-demo-provider-key-0123456789';
const fake = await startFakeProvider({ apiKey: providerKey, responder: demoResponder });
const { env, paths, config } = fakeProviderHostSetup({
  dir,
  providerUrl: fake.openaiBaseUrl,
  keyEnv: 'DEMO_KEY',
  key: providerKey,
});
say(`fake provider: ${fake.openaiBaseUrl}; data: ${paths.dataDir}`);
const { host } = await startProductionHost({
  paths,
  config,
  env,
  logLevel: process.env.CARAPACE_DEMO_LOG ?? 'warn',
  onProgress: (line) => say(`[agent image] ${line}`),
});
try {
  const text = 'Hello Carapace, please remember this.';
  say(`you → main: ${text}`);
  const result = await sendAndWait({
    client: createLocalClient(paths.socketFile),
    group: 'main',
    text,
    timeoutMs: 120_000,
    onReply: (r) => say(`Andy → you: ${r}`),
  });
  const note = path.join(paths.groupsDir, 'main', 'notes', 'last-message.txt');
  say(
    `turn: ${result.kind}; the agent's file: ${fs.existsSync(note) ? fs.readFileSync(note, 'utf8').trim() : '(missing)'}`,
  );
  say(
    `provider requests: ${fake.requests.length}, each authenticated with the real key only: ${fake.requests.every((r) => r.headers.authorization === `Bearer ${providerKey}`)}`,
  );
  process.exitCode = result.kind === 'answered' ? 0 : 1;
} finally {
  await host.stop('demo over');
  await fake.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
