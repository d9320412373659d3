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
import { EXAMPLE_CONFIG_FILE } from '../host/cli/cli-context.ts';
import { startProductionHost } from '../host/cli/start-production-host.ts';
import { loadConfig } from '../host/config/load-config.ts';
import { resolvePaths } from '../host/config/paths.ts';
import { startFakeProvider } from '../test/fakes/fake-provider.ts';
import { demoResponder } from '../test/fakes/demo-responder.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-demo-'));
const providerKey = 'sk-demo-provider-key-0123456789';
const fake = await startFakeProvider({ apiKey: providerKey, responder: demoResponder });
const env = {
  CARAPACE_CONFIG_DIR: path.join(dir, 'config'),
  CARAPACE_DATA_DIR: path.join(dir, 'data'),
  DEMO_KEY: providerKey,
};
fs.mkdirSync(env.CARAPACE_CONFIG_DIR, { recursive: true });
fs.writeFileSync(
  path.join(env.CARAPACE_CONFIG_DIR, 'config.toml'),
  `[provider]\nbase_url = "${fake.openaiBaseUrl}"\napi_key_env = "DEMO_KEY"\nmodel = "fake-model"\n`,
);
const paths = resolvePaths({ env, cwd: dir });
const config = loadConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
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
