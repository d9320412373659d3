/**
 * git through the host (issue 25): the real git client clones from and pushes to a real smart-HTTP server
 * (`git http-backend` behind a server that requires the token) only through the gateway's credential
 * route, which adds the token; the client holds only its run's credential key.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startGitHttpServer, type GitHttpServer } from '../../fakes/git-http-server.ts';
import {
  startCredentialGateway,
  type Asked,
  type CredentialGateway,
} from '../../helpers/credential-gateway.ts';

const TOKEN = 'github_pat_recipes_0123456789abcdefABCDEF';
const HELD = 'sk-live-host-held-provider-key-0123456789';
const BASIC = `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`;

let dir: string;
let server: GitHttpServer;
let h: CredentialGateway;
let remote: string;

/** Async: the gateway the client talks to runs in this process, so a blocking spawn would deadlock it. */
const git = (
  cwd: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> =>
  new Promise((resolve) => {
    const child = spawn('git', args, {
      cwd,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: dir,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_TERMINAL_PROMPT: '0',
        GIT_AUTHOR_NAME: 'Family bot',
        GIT_AUTHOR_EMAIL: 'bot@example.com',
        GIT_COMMITTER_NAME: 'Family bot',
        GIT_COMMITTER_EMAIL: 'bot@example.com',
        ...env,
      },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });

/** What the container's git gets: the remote rewritten to the host's route, and the run's key for that route only. */
function clientEnv(credentialKey: string): Record<string, string> {
  const route = `${h.url}/recipes`;
  const entries = [
    [`url.${route}.insteadOf`, remote],
    [`http.${h.url}/.extraHeader`, `Authorization: Bearer ${credentialKey}`],
  ];
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(entries.length) };
  entries.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key ?? '';
    env[`GIT_CONFIG_VALUE_${i}`] = value ?? '';
  });
  return env;
}

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-git-'));
  const root = path.join(dir, 'srv');
  fs.mkdirSync(root);
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(root, 'recipes.git')]);
  execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(root, 'other.git')]);
  const seed = path.join(dir, 'seed');
  execFileSync('git', ['init', '-q', '-b', 'main', seed]);
  fs.writeFileSync(path.join(seed, 'pancakes.md'), '# Pancakes\n\nFlour, eggs, milk.\n');
  expect((await git(seed, ['add', '.'])).status).toBe(0);
  expect((await git(seed, ['commit', '-qm', 'first recipe'])).status).toBe(0);
  expect((await git(seed, ['push', '-q', path.join(root, 'recipes.git'), 'main'])).status).toBe(0);
  server = await startGitHttpServer(root, BASIC);
  remote = `${server.url}/recipes.git`;
});

afterEach(async () => {
  await h?.close();
  await server?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function setUp(
  opts: { credential?: Record<string, unknown>; owner?: (a: Asked) => boolean; copFlags?: boolean } = {},
) {
  h = await startCredentialGateway({
    config: {
      credentials: {
        recipes: {
          kind: 'git',
          value_env: 'RECIPES_TOKEN',
          remote,
          public_source: false,
          secret_data: false,
          public_sink: true,
          dangerous_writes: false,
          ...opts.credential,
        },
      },
      groups: { family: { credentials: ['recipes'] } },
    },
    secrets: { RECIPES_TOKEN: TOKEN, PROVIDER_KEY: HELD },
    ...(opts.owner ? { owner: opts.owner } : {}),
    ...(opts.copFlags !== undefined ? { copFlags: opts.copFlags } : {}),
  });
}

async function cloneAndCommit(credentialKey: string, file: string, text: string): Promise<string> {
  const work = path.join(dir, `work-${Math.random().toString(36).slice(2)}`);
  const cloned = await git(dir, ['clone', '-q', remote, work], clientEnv(credentialKey));
  expect(cloned.stderr).toBe('');
  expect(cloned.status).toBe(0);
  fs.writeFileSync(path.join(work, file), text);
  expect((await git(work, ['add', '.'])).status).toBe(0);
  expect((await git(work, ['commit', '-qm', `add ${file}`])).status).toBe(0);
  return work;
}

const serverRef = (ref: string) =>
  spawnSync('git', ['--git-dir', path.join(dir, 'srv', 'recipes.git'), 'rev-parse', '--verify', '-q', ref], {
    encoding: 'utf8',
  }).stdout.trim();

describe('git through the host', () => {
  it('clones through the route with the token added by the host, and pushes a branch', async () => {
    await setUp();
    const { keys } = h.startRun();
    const work = await cloneAndCommit(keys.credentialKey, 'waffles.md', '# Waffles\n');
    expect(fs.readFileSync(path.join(work, 'pancakes.md'), 'utf8')).toContain('Flour, eggs, milk.');
    const pushed = await git(
      work,
      ['push', '-q', 'origin', 'HEAD:refs/heads/waffles'],
      clientEnv(keys.credentialKey),
    );
    expect(pushed.status, pushed.stderr).toBe(0);
    expect(serverRef('refs/heads/waffles')).toBe((await git(work, ['rev-parse', 'HEAD'])).stdout.trim());
    // Every request the forge saw carried the token, and it saw none without.
    expect(server.requests.length).toBeGreaterThan(2);
    expect(server.requests.every((r) => r.authorized)).toBe(true);
    expect(h.asked).toEqual([]);
    const push = h
      .audit()
      .find((r) => r.operation === 'credential.recipes' && r.details?.includes('waffles'));
    expect(push).toMatchObject({ decision: 'allowed', reason: 'no taint that this service could leak' });
  });

  it('asks the owner before a push to the default branch the remote names, and leaves it unchanged when denied', async () => {
    await setUp({ owner: () => false });
    const { keys } = h.startRun();
    const before = serverRef('refs/heads/main');
    const work = await cloneAndCommit(keys.credentialKey, 'waffles.md', '# Waffles\n');
    const pushed = await git(work, ['push', 'origin', 'main'], clientEnv(keys.credentialKey));
    expect(pushed.status).not.toBe(0);
    expect(pushed.stderr).toContain('403');
    expect(h.asked).toEqual([
      expect.objectContaining({
        operation: 'credential.recipes',
        reason: 'it pushes to protected refs/heads/main',
      }),
    ]);
    // The owner is shown what the commits say and touch, read from the pack, not only their hashes.
    const head = (await git(work, ['rev-parse', 'HEAD'])).stdout.trim();
    expect(h.asked[0]?.params).toMatchObject({
      commits: [
        {
          id: head.slice(0, 12),
          author: 'Family bot <bot@example.com>',
          date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
          message: 'add waffles.md',
        },
      ],
      files: ['waffles.md'],
    });
    expect(serverRef('refs/heads/main')).toBe(before);
  });

  it('asks the owner before a push to a ref that is a symbolic ref to the protected branch, by any name', async () => {
    // Kept after a rename from master to main, as self-hosted forges allow: a push to master moves main.
    const bare = path.join(dir, 'srv', 'recipes.git');
    execFileSync('git', ['--git-dir', bare, 'symbolic-ref', 'refs/heads/master', 'refs/heads/main']);
    execFileSync('git', ['--git-dir', bare, 'symbolic-ref', 'refs/heads/trunk', 'refs/heads/master']);
    await setUp({ owner: () => false });
    const { keys } = h.startRun();
    const before = serverRef('refs/heads/main');
    const work = await cloneAndCommit(keys.credentialKey, 'waffles.md', '# Waffles\n');
    for (const name of ['master', 'trunk']) {
      const pushed = await git(
        work,
        ['push', 'origin', `HEAD:refs/heads/${name}`],
        clientEnv(keys.credentialKey),
      );
      expect(pushed.status).not.toBe(0);
      expect(pushed.stderr).toContain('403');
    }
    expect(h.asked.map((a) => a.reason)).toEqual([
      'it pushes to protected refs/heads/main (through refs/heads/master)',
      'it pushes to protected refs/heads/main (through refs/heads/trunk)',
    ]);
    expect(serverRef('refs/heads/main')).toBe(before);

    // A plain branch still goes through unasked.
    const tagged = await git(
      work,
      ['push', '-q', 'origin', 'HEAD:refs/heads/waffles'],
      clientEnv(keys.credentialKey),
    );
    expect(tagged.status, tagged.stderr).toBe(0);
    expect(h.asked).toHaveLength(2);
  });

  it("finds a secret added to a long file, which git sends as a delta against the remote's copy", async () => {
    await setUp();
    const seed = path.join(dir, 'seed');
    const long = Array.from({ length: 400 }, (_, i) => `step ${i}: stir the batter for a while longer`).join(
      '\n',
    );
    fs.writeFileSync(path.join(seed, 'long.md'), `${long}\n`);
    expect((await git(seed, ['add', '.'])).status).toBe(0);
    expect((await git(seed, ['commit', '-qm', 'a long recipe'])).status).toBe(0);
    expect((await git(seed, ['push', '-q', path.join(dir, 'srv', 'recipes.git'), 'main'])).status).toBe(0);
    const { keys } = h.startRun();
    const work = await cloneAndCommit(
      keys.credentialKey,
      'long.md',
      `${long}\nstep 400: the key is ${HELD}\n`,
    );
    const pushed = await git(
      work,
      ['push', '-q', 'origin', 'HEAD:refs/heads/longer'],
      clientEnv(keys.credentialKey),
    );
    expect(pushed.status).not.toBe(0);
    expect(h.asked.map((a) => a.reason)).toEqual([
      expect.stringMatching(/^the pushed commits contain a secret/),
    ]);
    // The pack held the file as a delta, not whole: the scanner read what the delta inserts.
    expect(serverRef('refs/heads/longer')).toBe('');
  });

  it('pushes to a protected ref once the owner approves, and protects the refs the config names', async () => {
    await setUp({ owner: () => true, credential: { protected_refs: ['refs/heads/release/*'] } });
    const { keys } = h.startRun();
    const work = await cloneAndCommit(keys.credentialKey, 'waffles.md', '# Waffles\n');
    expect((await git(work, ['push', '-q', 'origin', 'main'], clientEnv(keys.credentialKey))).status).toBe(0);
    expect(h.asked).toEqual([]);
    expect(
      (await git(work, ['push', '-q', 'origin', 'HEAD:refs/heads/release/1'], clientEnv(keys.credentialKey)))
        .status,
    ).toBe(0);
    expect(h.asked.map((a) => a.reason)).toEqual(['it pushes to protected refs/heads/release/1']);
  });

  it("sends a corrupted run's push to the Cop, and a push whose files hold a secret to the owner", async () => {
    await setUp({ copFlags: false });
    const corrupted = h.startRun('family', { corruption: true, secret: false });
    const work = await cloneAndCommit(corrupted.keys.credentialKey, 'waffles.md', '# Waffles\n');
    const pushed1 = await git(
      work,
      ['push', '-q', 'origin', 'HEAD:refs/heads/waffles'],
      clientEnv(corrupted.keys.credentialKey),
    );
    expect(pushed1.status, pushed1.stderr).toBe(0);
    expect(h.copAsked).toHaveLength(1);
    expect(h.copAsked[0]).toContain('refs/heads/waffles');

    const clean = h.startRun();
    const leaky = await cloneAndCommit(
      clean.keys.credentialKey,
      'notes.md',
      `# Notes\nprovider key: ${HELD}\n`,
    );
    const pushed = await git(
      leaky,
      ['push', '-q', 'origin', 'HEAD:refs/heads/notes'],
      clientEnv(clean.keys.credentialKey),
    );
    expect(pushed.status).not.toBe(0);
    expect(h.asked.map((a) => a.reason)).toEqual([
      expect.stringMatching(/^the pushed commits contain a secret \(held-secret/),
    ]);
    expect(serverRef('refs/heads/notes')).toBe('');
  });

  it('reaches no other remote and nothing but the smart-HTTP endpoints, and nothing once the run ended', async () => {
    await setUp();
    const { keys } = h.startRun();
    const auth = { authorization: `Bearer ${keys.credentialKey}` };
    const otherRepo = await fetch(`${h.url}/other/info/refs?service=git-upload-pack`, { headers: auth });
    expect(otherRepo.status).toBe(403);
    const dumb = await fetch(`${h.url}/recipes/HEAD`, { headers: auth });
    expect(dumb.status).toBe(403);
    expect(await dumb.text()).toContain('is not part of git');
    const otherService = await fetch(`${h.url}/recipes/info/refs?service=git-upload-archive`, {
      headers: auth,
    });
    expect(otherService.status).toBe(403);
    // The container's git has no route for another remote: it goes there directly, without any token.
    const direct = await git(
      dir,
      ['clone', '-q', `${server.url}/other.git`, path.join(dir, 'x')],
      clientEnv(keys.credentialKey),
    );
    expect(direct.status).not.toBe(0);
    expect(server.requests.filter((r) => r.url.startsWith('/other.git')).every((r) => !r.authorized)).toBe(
      true,
    );
    keys.revoke();
    const after = await git(dir, ['clone', '-q', remote, path.join(dir, 'y')], clientEnv(keys.credentialKey));
    expect(after.status).not.toBe(0);
    expect(after.stderr).toMatch(/401|Authentication failed|could not read Username/);
  });
});
