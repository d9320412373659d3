import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../../host/config/config-error.ts';
import { createConfigFileStore, hashText } from '../../../host/config/config-file-store.ts';
import { createConfigHealth } from '../../../host/config/config-health.ts';
import { createConfigReloader, type ConfigHealth } from '../../../host/config/config-reloader.ts';
import { createConfigSource, type AppliedConfig } from '../../../host/config/config-source.ts';
import { watchConfigFile } from '../../../host/config/config-watch.ts';
import { checkConfigText } from '../../../host/config/load-config.ts';
import { appliesAtRestart } from '../../../host/config/reload-scope.ts';
import { lastGoodFile, loadStartConfig, saveLastGood } from '../../../host/config/safe-start.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const exampleFile = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../config/config.example.toml',
);
const tempDir = useTempDirs();
let configFile: string;

beforeEach(() => {
  configFile = path.join(tempDir(), 'config.toml');
});

function appliedOf(text: string): AppliedConfig {
  const checked = checkConfigText(configFile, text, exampleFile);
  if (!checked.ok) throw new Error('test config is not valid');
  return { config: checked.config, text, hash: hashText(text) };
}

const ANDY = '# my config\n[assistant]\nname = "Andy"\n';

/** A reloader on a real file and store; what it announced, logged and saved as last good is recorded. */
function setup(opts: { health?: ConfigHealth<unknown> } = {}) {
  fs.writeFileSync(configFile, ANDY);
  const store = createConfigFileStore({ configFile });
  const source = createConfigSource(appliedOf(ANDY), (err) => {
    throw err;
  });
  const announced: { key: string; text: string }[] = [];
  const lastGood: string[] = [];
  const seen: string[] = [];
  source.subscribe((next, prev) => seen.push(`${prev.config.assistant.name}→${next.config.assistant.name}`));
  let clock = 0;
  const reloader = createConfigReloader({
    store,
    source,
    check: (text) => checkConfigText(configFile, text, exampleFile),
    health: opts.health ?? { snapshot: () => undefined, problems: () => Promise.resolve([]) },
    announce: (key, text) => announced.push({ key, text }),
    saveLastGood: (a) => lastGood.push(a.text),
    logger: { info: () => undefined, warn: () => undefined },
    now: () => ++clock,
  });
  return { store, source, reloader, announced, lastGood, seen };
}

describe('config source', () => {
  it('gives every reader the replaced config and tells subscribers, even when one of them throws', () => {
    const errors: unknown[] = [];
    const source = createConfigSource(appliedOf(ANDY), (err) => errors.push(err));
    const heard: string[] = [];
    const offBroken = source.subscribe(() => {
      throw new Error('broken listener');
    });
    const off = source.subscribe((next) => heard.push(next.config.assistant.name));
    source.replace(appliedOf('[assistant]\nname = "Max"\n'));
    expect(source.current().assistant.name).toBe('Max');
    expect(heard).toEqual(['Max']);
    expect(errors).toEqual([new Error('broken listener')]);
    off();
    offBroken();
    source.replace(appliedOf(ANDY));
    expect(heard).toEqual(['Max']);
    expect(source.applied().hash).toBe(hashText(ANDY));
  });
});

describe('reload scope', () => {
  it('applies the name, group settings, limits, prices and web_fetch live; the rest at restart', () => {
    for (const key of [
      'assistant.name',
      'assistant.timezone',
      'groups.family.trigger',
      'groups."odd id".allowed_senders',
      'runs.wall_time_ms',
      'gateway.prices."gpt-4.1".input_per_mtok_usd',
      'web_fetch.max_bytes',
    ])
      expect(appliesAtRestart(key), key).toBe(false);
    for (const key of [
      'provider.model',
      'containers.memory_mb',
      'channels.telegram.bot_token_env',
      'gateway.port',
      'runs.max_concurrent',
      'security.approval_timeout_ms',
      'something.unknown',
    ])
      expect(appliesAtRestart(key), key).toBe(true);
  });
});

describe('config reloader', () => {
  it('does nothing when the file has the hash that runs', async () => {
    const s = setup();
    expect(await s.reloader.reload('file')).toEqual({ kind: 'unchanged', hash: hashText(ANDY) });
    expect(s.announced).toEqual([]);
    expect(s.seen).toEqual([]);
  });

  it('applies a valid change, announces the diff with what waits for a restart, and keeps it as last good', async () => {
    const s = setup();
    const text = '[assistant]\nname = "Max"\n[provider]\nmodel = "gpt-4o"\n';
    fs.writeFileSync(configFile, text);
    const outcome = await s.reloader.reload('cli');
    expect(outcome).toMatchObject({ kind: 'applied', hash: hashText(text), atRestart: ['provider.model'] });
    expect(s.source.current().assistant.name).toBe('Max');
    expect(s.seen).toEqual(['Andy→Max']);
    expect(s.lastGood).toEqual([text]);
    expect(s.announced).toHaveLength(1);
    expect(s.announced[0]?.text).toContain('assistant.name: "Andy" → "Max"\n');
    expect(s.announced[0]?.text).toContain('provider.model: "gpt-4.1-mini" → "gpt-4o" (applies at restart)');
    expect(s.announced[0]?.text).toContain('1 of these take effect when the host restarts');
  });

  it('applies a change of comments only without a notice', async () => {
    const s = setup();
    fs.writeFileSync(configFile, `${ANDY}# another comment\n`);
    expect(await s.reloader.reload('file')).toMatchObject({ kind: 'applied', changes: [] });
    expect(s.announced).toEqual([]);
  });

  it('refuses an invalid file with one line per problem, once per version, and the running config stays', async () => {
    const s = setup();
    fs.writeFileSync(configFile, '[assistant]\nname = "two words"\n[runs]\nmax_concurrent = 0\n');
    const outcome = await s.reloader.reload('file');
    expect(outcome.kind).toBe('refused');
    if (outcome.kind !== 'refused') return;
    expect(outcome.problems).toHaveLength(2);
    expect(outcome.problems[0]).toMatch(/config\.toml: assistant\.name: must be one word/);
    expect(outcome.problems[1]).toMatch(/runs\.max_concurrent/);
    expect(s.source.current().assistant.name).toBe('Andy');
    expect(s.announced).toHaveLength(1);
    expect(s.announced[0]?.text).toMatch(
      /not applied; the host runs on the configuration it had\. 2 problem/,
    );
    expect(s.announced[0]?.text.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(2);
    // The watcher reports the same edit more than once: told once.
    await s.reloader.reload('file');
    expect(s.announced).toHaveLength(1);
    expect(s.lastGood).toEqual([]);
  });

  it('refuses a file that is not TOML', async () => {
    const s = setup();
    fs.writeFileSync(configFile, '[assistant\nname = Max\n');
    const outcome = await s.reloader.reload('file');
    expect(outcome).toMatchObject({ kind: 'refused' });
    expect(s.source.current().assistant.name).toBe('Andy');
  });

  it('rolls back a change the health check fails: previous config runs, previous file restored, owner told', async () => {
    let healthy = true;
    const s = setup({
      health: {
        snapshot: () => undefined,
        problems: () => Promise.resolve(healthy ? [] : ['the telegram channel is stopped, it was connected']),
      },
    });
    healthy = false;
    const bad = '[assistant]\nname = "Max"\n';
    fs.writeFileSync(configFile, bad);
    const outcome = await s.reloader.reload('proposal');
    expect(outcome).toEqual({
      kind: 'rolled-back',
      hash: hashText(bad),
      problems: ['the telegram channel is stopped, it was connected'],
    });
    expect(s.source.current().assistant.name).toBe('Andy');
    expect(s.seen).toEqual(['Andy→Max', 'Max→Andy']);
    expect(fs.readFileSync(configFile, 'utf8')).toBe(ANDY);
    // The failed version stays in the ring for the owner to look at.
    expect(s.store.history().map((b) => s.store.backupText(b))).toEqual([bad]);
    expect(s.lastGood).toEqual([]);
    expect(s.announced[0]?.text).toMatch(/rolled back.*\n- the telegram channel is stopped/);
    expect(s.announced[0]?.text).toMatch(/restored to the previous version/);
    // The restored file is the running one: nothing more to do.
    expect(await s.reloader.reload('file')).toMatchObject({ kind: 'unchanged' });
  });

  it('runs reloads one after another', async () => {
    const s = setup();
    fs.writeFileSync(configFile, '[assistant]\nname = "Max"\n');
    const [a, b] = await Promise.all([s.reloader.reload('cli'), s.reloader.reload('file')]);
    expect(a.kind).toBe('applied');
    expect(b.kind).toBe('unchanged');
  });
});

describe('config health', () => {
  const health = (states: Record<string, string>, admin: string[], notify?: string[]) =>
    createConfigHealth({
      channels: () => Object.entries(states).map(([name, state]) => ({ name, state })),
      adminChats: () => admin.map((channel) => ({ channel })),
      notifyChannels: () => notify,
    });

  it('fails when a connected channel dropped, no admin chat is linked, or notify names an unlinked one', async () => {
    const states: Record<string, string> = { local: 'connected', telegram: 'connected' };
    const h = health(states, ['local'], ['telegram']);
    const before = h.snapshot();
    states.telegram = 'stopped';
    expect(await h.problems(before)).toEqual([
      'the telegram channel is stopped, it was connected',
      expect.stringMatching(/\[admin\] notify names "telegram", which has no linked admin chat/),
    ]);
    expect(await health({ local: 'connected' }, []).problems({ connected: [] })).toEqual([
      'no admin chat is reachable',
    ]);
    const ok = health({ local: 'connected' }, ['local']);
    expect(await ok.problems(ok.snapshot())).toEqual([]);
  });
});

describe('safe start', () => {
  it('starts on a valid file as it is', () => {
    fs.writeFileSync(configFile, ANDY);
    const start = loadStartConfig({ configFile, exampleFile });
    expect(start.safeMode).toBeUndefined();
    expect(start.applied).toEqual(appliedOf(ANDY));
  });

  it('runs an invalid file on the last good copy and says what is wrong with the file', () => {
    saveLastGood(configFile, { text: ANDY });
    expect(fs.statSync(lastGoodFile(configFile)).mode & 0o777).toBe(0o600);
    fs.writeFileSync(configFile, '[assistant]\nname = "two words"\n');
    const start = loadStartConfig({ configFile, exampleFile });
    expect(start.applied.text).toBe(ANDY);
    expect(start.applied.config.assistant.name).toBe('Andy');
    expect(start.safeMode?.problems.map((p) => p.key)).toEqual(['assistant.name']);
    expect(start.safeMode?.lastGoodFile).toBe(lastGoodFile(configFile));
  });

  it('stops with the file problems when there is no good copy to run on', () => {
    fs.writeFileSync(configFile, '[assistant]\nname = "two words"\n');
    expect(() => loadStartConfig({ configFile, exampleFile })).toThrow(ConfigError);
    saveLastGood(configFile, { text: '[assistant]\nnmae = "x"\n' });
    expect(() => loadStartConfig({ configFile, exampleFile })).toThrow(/assistant\.name/);
  });
});

describe('config file watch', () => {
  it('watches a config folder that does not exist yet: a first start makes it (0700) and sees the file written later', async () => {
    const dir = path.join(tempDir(), 'fresh', 'carapace');
    const file = path.join(dir, 'config.toml');
    let changes = 0;
    const errors: Error[] = [];
    const stop = watchConfigFile({
      configFile: file,
      debounceMs: 20,
      onChange: () => changes++,
      onError: (e) => errors.push(e),
    });
    try {
      expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
      fs.writeFileSync(file, ANDY);
      await vi.waitFor(() => expect(changes).toBeGreaterThanOrEqual(1), { timeout: 5_000 });
      expect(errors).toEqual([]);
    } finally {
      stop();
    }
  });

  it('reports an atomic replace and an in-place edit of the file, not of its neighbours', async () => {
    fs.writeFileSync(configFile, ANDY);
    let changes = 0;
    const errors: Error[] = [];
    const stop = watchConfigFile({
      configFile,
      debounceMs: 20,
      onChange: () => changes++,
      onError: (e) => errors.push(e),
    });
    try {
      const store = createConfigFileStore({ configFile });
      store.write('[assistant]\nname = "Max"\n', store.read().hash);
      await vi.waitFor(() => expect(changes).toBeGreaterThanOrEqual(1), { timeout: 5_000 });
      const seen = changes;
      fs.appendFileSync(configFile, '# edited\n');
      await vi.waitFor(() => expect(changes).toBeGreaterThan(seen), { timeout: 5_000 });
      expect(errors).toEqual([]);
    } finally {
      stop();
    }
  });
});
