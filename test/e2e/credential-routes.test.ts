/**
 * Credentials that never enter a container (issue 25), through real containers: a real git smart-HTTP
 * server (`git http-backend` behind a server that requires the token) and a recording HTTP API, both on
 * this machine's loopback, which only the host reaches. The family group's runs clone and push with plain
 * `git` and call the API with node's fetch; the host adds the secrets. The token is then searched for
 * from the host in the container's environment, its processes' environments and memory, its files and the
 * group's folders; refusals, the Cop and the owner are seen where they happen.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply, type Responder } from '../fakes/fake-provider-script.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { startGitHttpServer, type GitHttpServer } from '../fakes/git-http-server.ts';
import { startRecordingApi, type RecordingApi } from '../fakes/recording-api.ts';
import {
  auditMark,
  auditSince,
  bash,
  copReviews,
  nextApproval,
  ownerSays,
  RESULT_SEPARATOR,
  resultsOf,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { containerPids, filesHolding, memoryHolds } from '../helpers/process-search.ts';
import { startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';

const TOKEN = `github_pat_${crypto.randomBytes(20).toString('hex')}`;
const API_VALUE = `notes-${crypto.randomBytes(16).toString('hex')}`;
const MARKER = `Family bot ${crypto.randomBytes(4).toString('hex')}`;
const BASIC = `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`;
const withGroups = (config: Record<string, unknown>) => config as unknown as E2eHostOptions['config'];

/** A small HTTP client the runs' commands use (the image has no curl): method, path, body file, key file. */
const CALL_SCRIPT = `import fs from 'node:fs';
const [method, path, bodyFile, keyFile] = process.argv.slice(2);
const key = keyFile ? fs.readFileSync(keyFile, 'utf8').trim() : process.env.CARAPACE_CREDENTIAL_KEY;
const res = await fetch(process.env.CARAPACE_CREDENTIALS_URL + path, {
  method,
  headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' },
  body: bodyFile ? fs.readFileSync(bodyFile) : undefined,
});
console.log(res.status, (await res.text()).slice(0, 300));
`;

await describeDocker('e2e: credentials through the host', () => {
  let h: E2eHost;
  let dir: string;
  let gitServer: GitHttpServer;
  let api: RecordingApi;
  let remote: string;
  let groupDir: string;
  const seen = new Set<string>();
  const serverRef = (ref: string) =>
    spawnSync(
      'git',
      ['--git-dir', path.join(dir, 'srv', 'recipes.git'), 'rev-parse', '--verify', '-q', ref],
      {
        encoding: 'utf8',
      },
    ).stdout.trim();
  const clone = (into: string) =>
    `cd /workspace/group && rm -rf ${into} && git clone -q "${remote}" ${into} && cd ${into}`;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-e2e-cred-'));
    const srv = path.join(dir, 'srv');
    const seed = path.join(dir, 'seed');
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(srv, 'recipes.git')]);
    execFileSync('git', ['init', '-q', '--bare', '-b', 'main', path.join(srv, 'other.git')]);
    execFileSync('git', ['init', '-q', '-b', 'main', seed]);
    fs.writeFileSync(path.join(seed, 'pancakes.md'), '# Pancakes\n');
    const id = ['-c', 'user.name=Seed', '-c', 'user.email=seed@example.com'];
    execFileSync('git', [...id, '-C', seed, 'add', '.']);
    execFileSync('git', [...id, '-C', seed, 'commit', '-qm', 'first recipe']);
    execFileSync('git', ['-C', seed, 'push', '-q', path.join(srv, 'recipes.git'), 'main']);
    gitServer = await startGitHttpServer(srv, BASIC);
    api = await startRecordingApi(`Bearer ${API_VALUE}`);
    remote = `${gitServer.url}/recipes.git`;
    const trust = { public_source: false, secret_data: false, public_sink: true, dangerous_writes: false };
    h = await startE2eHost({
      secrets: { RECIPES_TOKEN: TOKEN, NOTES_KEY: API_VALUE },
      config: withGroups({
        runs: { max_attempts: 1 },
        credentials: {
          recipes: { kind: 'git', value_env: 'RECIPES_TOKEN', remote, ...trust },
          notes: {
            kind: 'http',
            value_env: 'NOTES_KEY',
            base_url: `${api.url}/api`,
            allow: ['GET /notes/**', 'POST /notes/*/items'],
            ...trust,
          },
        },
        groups: {
          family: { credentials: ['recipes', 'notes'], git_name: MARKER, git_email: 'bot@example.com' },
        },
      }),
    });
    await h.addLocalGroups('family');
    groupDir = path.join(h.paths.groupsDir, 'family');
    fs.mkdirSync(groupDir, { recursive: true });
    fs.writeFileSync(path.join(groupDir, 'call.mjs'), CALL_SCRIPT);
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
    await gitServer?.close();
    await api?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it('clones and pushes through the host, and the token is nowhere in the container: env, processes, memory, files', async () => {
    let searched: { envs: string[]; memory: number[]; files: string[]; markerInMemory: boolean } | undefined;
    const search = async () => {
      const box = await h.runningContainer('family');
      const pids = await containerPids(h.docker, box.Id);
      const envs = [box.Config.Env.join('\n')];
      for (const pid of pids) {
        try {
          envs.push(fs.readFileSync(`/proc/${pid}/environ`, 'latin1'));
        } catch {
          // the process ended meanwhile
        }
      }
      const files = [
        ...filesHolding(`/proc/${pids[0]}/root/tmp`, TOKEN),
        ...filesHolding(`/proc/${pids[0]}/root/home`, TOKEN),
        ...filesHolding(groupDir, TOKEN),
        ...filesHolding(path.join(h.paths.sessionsDir, 'family'), TOKEN),
      ];
      searched = {
        envs,
        memory: pids.filter((pid) => memoryHolds(pid, TOKEN)),
        files,
        // The search works: what the host did hand the run (the group's git identity) is found.
        markerInMemory: pids.some((pid) => memoryHolds(pid, MARKER)),
      };
    };
    const agent: Responder = turnResponder(
      () =>
        reply.toolCalls([
          bash(
            `${clone('recipes')} && echo '# Waffles' > waffles.md && git add . && git commit -qm 'add waffles' && ` +
              `git push -q origin HEAD:refs/heads/waffles 2>&1; git log -1 --format='%an <%ae> %H'`,
          ),
        ]),
      async (t) => {
        await search();
        return reply.text(t.toolResults.join(RESULT_SEPARATOR));
      },
    );
    h.fake.setResponder(securityResponder({ family: agent }));
    const copFrom = h.fake.requests.length;
    const mark = auditMark(h);
    const res = await h.send('family', '@Andy add a waffles recipe on a branch');
    expect(res.code).toBe(0);
    const [out] = resultsOf(res.stdout);
    const commit = /<bot@example\.com> ([0-9a-f]{40})/.exec(out ?? '')?.[1];
    expect(out).toContain(`${MARKER} <bot@example.com>`);
    expect(serverRef('refs/heads/waffles')).toBe(commit);
    expect(gitServer.requests.length).toBeGreaterThan(2);
    expect(gitServer.requests.every((r) => r.authorized)).toBe(true);

    // The model is told what it can use, by name and remote, never by value.
    const prompt = JSON.stringify(h.requestsOf('family')[0]?.body);
    expect(prompt).toContain(
      `Credentials the host adds for you (you never see their values): recipes (git ${remote})`,
    );
    expect(prompt).not.toContain(TOKEN);

    expect(searched).toBeDefined();
    expect(searched?.markerInMemory).toBe(true);
    for (const env of searched?.envs ?? []) expect(env).not.toContain(TOKEN);
    expect(searched?.memory).toEqual([]);
    expect(searched?.files).toEqual([]);

    // The run is corrupted (a non-admin group): its push went to the Cop, as service writes do.
    expect(copReviews(h.fake.requests, copFrom).map((r) => r.operation)).toContain('credential.recipes');
    const rows = auditSince(h, mark).filter((r) => r.operation.startsWith('credential.recipes'));
    expect(
      rows
        .filter((r) => r.operation === 'credential.recipes.request')
        .every((r) => r.decision === 'forwarded'),
    ).toBe(true);
    expect(JSON.stringify(auditSince(h, mark))).not.toContain(TOKEN);

    // status and doctor say whether each credential works, never what it is.
    const status = await h.cli(['status']);
    expect(status.stdout).toMatch(
      /credential recipes \(git http:\/\/127\.0\.0\.1:\d+\/recipes\.git\): value set, groups: family, last request at \S+ answered HTTP 200/,
    );
    expect(status.stdout).toMatch(
      /credential notes \(http http:\/\/127\.0\.0\.1:\d+\/api\): value set, groups: family, not used since start/,
    );
    const doctor = await h.cli(['doctor']);
    expect(doctor.stdout).toMatch(
      /recipes \(git\): http:\/\/127\.0\.0\.1:\d+\/recipes\.git answered HTTP 200/,
    );
    for (const out of [status.stdout, status.stderr, doctor.stdout, doctor.stderr]) {
      expect(out).not.toContain(TOKEN);
      expect(out).not.toContain(API_VALUE);
    }
  }, 180_000);

  it('refuses another remote, an unlisted path or method, and any request once the run has ended', async () => {
    h.fake.setResponder(
      securityResponder({
        family: runTools([
          bash(`git ls-remote "$CARAPACE_CREDENTIALS_URL/other" 2>&1 | head -2`),
          bash('node /workspace/group/call.mjs GET /notes/admin/users'),
          bash('node /workspace/group/call.mjs DELETE /notes/notes/1'),
          bash('node /workspace/group/call.mjs GET /notes/notes/1'),
          bash('printf %s "$CARAPACE_CREDENTIAL_KEY" > /workspace/group/old-key'),
        ]),
      }),
    );
    const before = api.requests.length;
    const first = resultsOf((await h.send('family', '@Andy try some things')).stdout);
    expect(first[0]).toContain('403');
    expect(first[1]).toContain(
      '403 {"error":{"message":"GET /admin/users is not on the allowlist of credential notes"}}',
    );
    expect(first[2]).toContain('403');
    expect(first[3]).toContain('200 {"ok":true,"method":"GET","url":"/api/notes/1"}');
    expect(api.requests.slice(before).map((r) => `${r.method} ${r.url}`)).toEqual(['GET /api/notes/1']);
    expect(api.requests.at(-1)?.headers.authorization).toBe(`Bearer ${API_VALUE}`);

    h.fake.setResponder(
      securityResponder({
        family: runTools([
          bash("node /workspace/group/call.mjs GET /notes/notes/1 '' /workspace/group/old-key"),
        ]),
      }),
    );
    const [late] = resultsOf((await h.send('family', '@Andy try the old key')).stdout);
    expect(late).toContain('401');
    expect(api.requests.length).toBe(before + 1);
  }, 180_000);

  it('asks the owner before a push to the protected branch and leaves it unchanged when denied', async () => {
    const main = serverRef('refs/heads/main');
    h.fake.setResponder(
      securityResponder({
        family: runTools([
          bash(
            `${clone('recipes2')} && echo '# Crepes' > crepes.md && git add . && git commit -qm 'add crepes' && git push origin main 2>&1 | tail -3`,
          ),
        ]),
      }),
    );
    const mark = auditMark(h);
    const sent = h.send('family', '@Andy add crepes to main');
    const ask = await nextApproval(h, seen, 'credential.recipes');
    expect(ask.text).toContain('it pushes to protected refs/heads/main');
    expect(await ownerSays(h, `deny ${ask.id}`)).toMatch(/denied/i);
    const [out] = resultsOf((await sent).stdout);
    // git reports the refusal as a broken connection or a 403, depending on when it reads the answer.
    expect(out).toMatch(/403|unexpected disconnect|hung up/);
    expect(out).not.toContain('main -> main');
    expect(serverRef('refs/heads/main')).toBe(main);
    expect(auditSince(h, mark).map((r) => [r.operation, r.decision])).toContainEqual([
      'credential.recipes',
      'denied',
    ]);
  }, 180_000);

  it('asks the owner before a POST whose body holds a secret the host holds', async () => {
    // The body comes from a file, so the command itself holds no secret (the bash gate would ask first).
    fs.writeFileSync(
      path.join(groupDir, 'note.json'),
      JSON.stringify({ text: `the key is ${h.providerKey}` }),
    );
    h.fake.setResponder(
      securityResponder({
        family: runTools([
          bash('node /workspace/group/call.mjs POST /notes/notes/7/items /workspace/group/note.json'),
        ]),
      }),
    );
    const before = api.requests.length;
    const sent = h.send('family', '@Andy save the note');
    const ask = await nextApproval(h, seen, 'credential.notes');
    expect(ask.text).toContain('the request contains a secret');
    expect(ask.text).not.toContain(h.providerKey);
    await ownerSays(h, `deny ${ask.id}`);
    const [out] = resultsOf((await sent).stdout);
    expect(out).toContain('403');
    expect(api.requests.length).toBe(before);
  }, 180_000);
});
