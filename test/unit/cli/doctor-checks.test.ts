import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { beforeEach, describe, expect, it } from 'vitest';
import { createCliContext, type CliContext } from '../../../host/cli/cli-context.ts';
import {
  checkAllowlistSymlinks,
  checkEnvFile,
  checkGroupSettings,
  checkProvider,
  checkServiceNames,
  checkStartable,
} from '../../../host/cli/commands/doctor-config-checks.ts';
import { checkConfig } from '../../../host/cli/commands/doctor-command.ts';
import { checkModelPrices } from '../../../host/cli/commands/doctor-price-checks.ts';
import { createSqliteUsageStore } from '../../../host/gateway/spend/usage-store-sqlite.ts';
import { loadConfig } from '../../../host/config/load-config.ts';
import { lastGoodFile, saveLastGood } from '../../../host/config/safe-start.ts';
import { CleanRoomError } from '../../../host/security/policies/admin-clean-room.ts';
import { assertStartableConfig, createHostServiceRegistry } from '../../../host/config/service-grants.ts';
import { openStore } from '../../../host/store/store.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';
import { startFakeProvider } from '../../fakes/fake-provider.ts';

const tempDir = useTempDirs();
let root: string;
let configDir: string;
let dataDir: string;

beforeEach(() => {
  root = tempDir();
  configDir = path.join(root, 'config');
  dataDir = path.join(root, 'data');
  fs.mkdirSync(configDir);
});

function context(toml = '', env: NodeJS.ProcessEnv = {}): CliContext {
  fs.writeFileSync(path.join(configDir, 'config.toml'), toml);
  return createCliContext(
    {
      stdout: new PassThrough(),
      stderr: new PassThrough(),
      stdin: new PassThrough(),
      env: { CARAPACE_CONFIG_DIR: configDir, CARAPACE_DATA_DIR: dataDir, ...env },
      cwd: root,
    },
    loadConfig,
  );
}

describe('doctor runs the checks start runs', () => {
  it('fails on a public_source service for the admin group, exactly where start refuses', async () => {
    const ctx = context('[groups.main]\nservices = ["web_fetch"]\n');
    expect(() =>
      assertStartableConfig(
        ctx.config(),
        createHostServiceRegistry(() => ctx.config()),
        'main',
      ),
    ).toThrow(CleanRoomError);
    const r = await checkStartable(ctx);
    expect(r.ok).toBe(false);
    expect(r.detail).toMatch(/refusing to start: the admin group "main" is given web_fetch/);
    expect(r.fix).toContain('config.toml');
    expect((await checkStartable(context(''))).ok).toBe(true);
  });

  it('checks the group the store flags admin, whatever its id', async () => {
    fs.mkdirSync(dataDir, { recursive: true });
    const store = openStore({ file: path.join(dataDir, 'carapace.db') });
    store.groups.add({ id: 'owner', channel: 'local', chatId: 'owner', name: 'Owner', isAdmin: true });
    store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'Main', isAdmin: false });
    store.close();
    const owner = await checkStartable(context('[groups.owner]\nservices = ["web_fetch"]\n'));
    expect(owner.ok).toBe(false);
    expect(owner.detail).toMatch(/the admin group "owner" is given web_fetch/);
    expect(owner.detail).toContain('[groups.owner] services');
    // A group that is only called "main" is not the admin group.
    expect((await checkStartable(context('[groups.main]\nservices = ["web_fetch"]\n'))).ok).toBe(true);
  });
});

describe('doctor on a broken config.toml', () => {
  it('names every problem and says the host runs on the last good copy, or that it cannot start', async () => {
    const broken = '[assistant]\nname = "two words"\n';
    const none = await checkConfig(context(broken));
    expect(none.ok).toBe(false);
    expect(none.detail).toMatch(/assistant\.name: must be one word/);
    expect(none.detail).toMatch(/no last good configuration to fall back on/);
    saveLastGood(path.join(configDir, 'config.toml'), { text: '[assistant]\nname = "Andy"\n' });
    const safe = await checkConfig(context(broken));
    expect(safe.ok).toBe(false);
    expect(safe.detail).toMatch(/assistant\.name: must be one word/);
    expect(safe.detail).toContain(
      `safe mode on the last good configuration, ${lastGoodFile(path.join(configDir, 'config.toml'))}`,
    );
  });
});

describe('doctor checks beyond start', () => {
  it('fails when the key variable of a remote provider is unset, and passes a keyless server of your own', async () => {
    const remote = '[provider]\nbase_url = "https://openrouter.ai/api/v1"\napi_key_env = "OR_KEY"\n';
    const r = await checkProvider(context(remote));
    expect(r.ok).toBe(false);
    expect(r.detail).toMatch(/OR_KEY is not set, and openrouter\.ai refuses requests without a key/);
    expect(r.fix).toMatch(/OR_KEY=<key>/);
    expect((await checkProvider(context(''))).ok).toBe(false); // api.openai.com without OPENAI_API_KEY
    const fake = await startFakeProvider();
    try {
      const own = await checkProvider(context(`[provider]\nbase_url = "${fake.openaiBaseUrl}"\n`));
      expect(own).toMatchObject({ ok: true });
      expect(own.detail).toMatch(/no key \(OPENAI_API_KEY is not set\), fine for a server of your own/);
    } finally {
      await fake.close();
    }
  });

  it('tests the key against the provider: accepted, refused with the fix, unreachable with the fix', async () => {
    const fake = await startFakeProvider({ apiKey: 'sk-right-1234567890' });
    try {
      const conf = `[provider]\nbase_url = "${fake.openaiBaseUrl}"\napi_key_env = "P_KEY"\n`;
      const accepted = await checkProvider(context(conf, { P_KEY: 'sk-right-1234567890' }));
      expect(accepted).toMatchObject({ ok: true });
      expect(accepted.detail).toMatch(/P_KEY is set; the provider accepted it \(GET \/models\)/);
      const refused = await checkProvider(context(conf, { P_KEY: 'sk-wrong-1234567890' }));
      expect(refused).toMatchObject({ ok: false });
      expect(refused.detail).toMatch(/the provider refused it \(HTTP 401 on GET \/models\)/);
      expect(refused.fix).toMatch(/check the key in P_KEY/);
      const keyless = await checkProvider(context(conf));
      expect(keyless.fix).toMatch(/this server wants a key: put P_KEY=<key>/);
      // The test key travels only in its header, never into what doctor prints.
      expect(JSON.stringify([accepted, refused, keyless])).not.toContain('sk-');
    } finally {
      await fake.close();
    }
    // A loopback port that was just free: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const closed = await checkProvider(
      context(`[provider]\nbase_url = "http://127.0.0.1:${port}/v1"\napi_key_env = "P_KEY"\n`, {
        P_KEY: 'k',
      }),
    );
    expect(closed).toMatchObject({ ok: false });
    expect(closed.detail).toMatch(/cannot be reached: .*ECONNREFUSED/);
    expect(closed.fix).toMatch(/check \[provider\] base_url/);
  });

  it('fails on a .env other users can read, with the chmod that fixes it', async () => {
    const ctx = context('');
    expect((await checkEnvFile(ctx)).ok).toBe(true); // none at all is fine
    fs.writeFileSync(ctx.paths.envFile, 'OPENAI_API_KEY=sk-1234567890\n', { mode: 0o644 });
    fs.chmodSync(ctx.paths.envFile, 0o644);
    const open = await checkEnvFile(ctx);
    expect(open.ok).toBe(false);
    expect(open.fix).toBe(`chmod 600 ${ctx.paths.envFile}`);
    fs.chmodSync(ctx.paths.envFile, 0o600);
    expect((await checkEnvFile(ctx)).ok).toBe(true);
  });

  it('fails on a service name that does not exist, naming the group and the known ones', async () => {
    const ctx = context('[groups.family]\nservices = ["web_fecth"]\n');
    const r = await checkServiceNames(ctx);
    expect(r.ok).toBe(false);
    expect(r.detail).toContain('web_fecth (in [groups.family])');
    expect(r.detail).toContain('known: web_fetch');
    expect((await checkServiceNames(context('[groups.family]\nservices = ["web_fetch"]\n'))).ok).toBe(true);
  });

  it('fails on settings for a group that does not exist, and passes once it is added', async () => {
    const toml = '[groups.famliy]\nservices = []\n';
    const r = await checkGroupSettings(context(toml));
    expect(r.ok).toBe(false);
    expect(r.detail).toContain('[groups.famliy]');
    expect(r.fix).toMatch(/carapace groups add famliy/);
    fs.mkdirSync(dataDir, { recursive: true });
    const store = openStore({ file: path.join(dataDir, 'carapace.db') });
    store.groups.add({ id: 'famliy', name: 'famliy', channel: 'local', chatId: 'famliy', isAdmin: false });
    store.close();
    expect((await checkGroupSettings(context(toml))).ok).toBe(true);
  });

  it('fails on an allowed mount root reached through a symlink, giving the real path', async () => {
    const real = path.join(root, 'projects-real');
    const link = path.join(root, 'projects');
    fs.mkdirSync(real);
    fs.symlinkSync(real, link);
    fs.writeFileSync(
      path.join(configDir, 'mount-allowlist.toml'),
      `[[allowed_roots]]\npath = "${link}"\nallow_read_write = false\n`,
    );
    const r = await checkAllowlistSymlinks(context(''));
    expect(r.ok).toBe(false);
    expect(r.detail).toContain(`${link} → ${real}`);
    fs.writeFileSync(
      path.join(configDir, 'mount-allowlist.toml'),
      `[[allowed_roots]]\npath = "${real}"\nallow_read_write = false\n`,
    );
    expect((await checkAllowlistSymlinks(context(''))).ok).toBe(true);
  });
});

describe('doctor checks the prices of the models in use', () => {
  const on = (day: string) => () => Date.parse(`${day}T12:00:00Z`);

  it('passes when every model in use is priced, and says which prices come from where', async () => {
    const r = await checkModelPrices(on('2026-01-10'))(
      context(
        '[provider]\nmodel = "gpt-4.1-mini"\nfallback_models = ["my-llama"]\n' +
          '[gateway.prices]\n"my-llama" = { input_per_mtok_usd = 0, output_per_mtok_usd = 0 }\n',
      ),
    );
    expect(r).toMatchObject({ name: 'model prices', ok: true });
    expect(r.detail).toContain('gpt-4.1-mini (table), my-llama ([gateway.prices])');
    expect(r.detail).not.toContain('six months');
  });

  it('fails on a configured model without a price, naming it and the setting that prices it', async () => {
    const r = await checkModelPrices(on('2026-01-10'))(
      context('[provider]\nfallback_models = ["gpt-9-mini"]\n'),
    );
    expect(r.ok).toBe(false);
    expect(r.detail).toContain('gpt-9-mini has no price: it is charged the ceiling ($150 in, $600 out');
    expect(r.fix).toContain('[gateway.prices]');
    expect(r.fix).toContain('"gpt-9-mini" = { input_per_mtok_usd');
  });

  it('fails on a model the records show in use this week without a price, but not on a voice model', async () => {
    const store = openStore({ file: path.join(dataDir, 'carapace.db') });
    const usage = createSqliteUsageStore(store.db);
    for (const model of ['unlisted-router-model', 'whisper-1'])
      await usage.recordUsage({
        runId: '1',
        groupId: 'main',
        day: '2026-01-09',
        model,
        promptTokens: 1,
        completionTokens: 1,
        costMicros: 1,
      });
    store.close();
    const r = await checkModelPrices(on('2026-01-10'))(context(''));
    expect(r.ok).toBe(false);
    expect(r.detail).toContain('unlisted-router-model has no price');
    expect(r.detail).not.toContain('whisper-1');
  });

  it('says, without failing, when a listed price in use and the table are more than six months old', async () => {
    const r = await checkModelPrices(on('2027-03-01'))(context(''));
    expect(r.ok).toBe(true);
    expect(r.detail).toContain(
      'The listed price of gpt-4.1-mini is from 2025-10-01, more than six months old',
    );
    expect(r.detail).toMatch(/The price table is from \d{4}-\d{2}-\d{2}, more than six months old/);
  });
});
