/**
 * Two groups run at the same time, each in its own container, and neither sees the other's files,
 * conversation or messages: group alpha writes a file while group beta's run (alive at the same moment)
 * looks for it with every file tool path it could try.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { reply } from '../fakes/fake-provider.ts';
import { byGroup, chatTextsOf, createGate, turnOf, turnResponder } from '../fakes/e2e-responders.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { startE2eHost, type E2eHost } from './e2e-harness.ts';

/** True when `a` is `b` or one of its ancestors or descendants. */
function related(a: string, b: string): boolean {
  const rel = path.relative(a, b);
  const back = path.relative(b, a);
  return rel === '' || !rel.startsWith('..') || !back.startsWith('..');
}

await describeDocker('e2e: groups run side by side in isolation', () => {
  let h: E2eHost;

  beforeAll(async () => {
    h = await startE2eHost({ config: { runs: { max_concurrent: 2 } } });
    const added = await Promise.all([
      h.cli(['groups', 'add', 'alpha', '--channel', 'local']),
      h.cli(['groups', 'add', 'beta', '--channel', 'local']),
    ]);
    for (const a of added) expect(a.code).toBe(0);
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
  }, 60_000);

  it("two groups run at once; one never sees the other's files or messages", async () => {
    const secret = `ALPHA-SECRET-${crypto.randomBytes(6).toString('hex')}`;
    const alphaText = `@Andy keep this safe: ${secret}`;
    const betaText = '@Andy what files can you find?';
    const alphaHostFile = path.join(h.paths.groupsDir, 'alpha', 'secret-alpha.txt');
    const release = createGate();
    h.fake.setResponder(
      byGroup({
        alpha: turnResponder(
          () =>
            reply.toolCalls([
              { name: 'write_file', arguments: { path: 'secret-alpha.txt', content: secret } },
            ]),
          async (t) => {
            await release.opened;
            return reply.text(`alpha: ${t.toolResults[0]}`);
          },
        ),
        beta: turnResponder(
          async () => {
            await release.opened;
            return reply.toolCalls([
              { name: 'list_files', arguments: { path: '/workspace', recursive: true } },
              { name: 'read_file', arguments: { path: '/workspace/group/secret-alpha.txt' } },
              { name: 'read_file', arguments: { path: '../alpha/secret-alpha.txt' } },
              { name: 'read_file', arguments: { path: alphaHostFile } },
              { name: 'read_file', arguments: { path: '/workspace/session/../../alpha/secret-alpha.txt' } },
              // Past the file tools' own checks: the container's filesystem has no host data folder.
              { name: 'bash', arguments: { command: `cat ${alphaHostFile}; ls ${h.paths.groupsDir}` } },
            ]);
          },
          (t) => reply.text(`beta results:\n${t.toolResults.join('\n--\n')}`),
        ),
      }),
    );

    const sends = Promise.all([h.send('alpha', alphaText), h.send('beta', betaText)]);
    // Both runs are live at once: alpha has written its file and waits for the model while beta's
    // container is up and waiting too.
    await h.waitForRequest((r) => turnOf(r).group === 'alpha' && turnOf(r).step === 1);
    await h.waitForRequest((r) => turnOf(r).group === 'beta');
    expect(fs.readFileSync(alphaHostFile, 'utf8')).toBe(secret);
    const [alphaBox, betaBox] = await Promise.all([h.runningContainer('alpha'), h.runningContainer('beta')]);
    expect(h.runs('alpha').at(-1)?.status).toBe('running');
    expect(h.runs('beta').at(-1)?.status).toBe('running');
    // Beta's container has no mount that reaches alpha's folders (nor a parent holding them).
    const alphaDirs = [path.join(h.paths.groupsDir, 'alpha'), path.join(h.paths.sessionsDir, 'alpha')];
    for (const m of betaBox.Mounts)
      for (const dir of alphaDirs) expect(related(m.Source, dir), `${m.Source} vs ${dir}`).toBe(false);
    expect(alphaBox.Mounts.map((m) => m.Source)).toEqual(expect.arrayContaining(alphaDirs));
    release.open();

    const [alpha, beta] = await sends;
    expect(alpha.stdout).toBe('alpha: Wrote ' + Buffer.byteLength(secret) + ' bytes to secret-alpha.txt.\n');
    expect(alpha.code).toBe(0);
    expect(beta.code).toBe(0);

    // Each of beta's attempts came back empty or refused, and nothing of alpha's file leaked.
    const betaFinal = h.requestsOf('beta').find((r) => turnOf(r).step === 1);
    const results = betaFinal ? turnOf(betaFinal).toolResults : [];
    expect(results).toHaveLength(6);
    const [listing = '', sameName = '', sibling = '', hostPath = '', escape = '', shell = ''] = results;
    expect(listing).toMatch(/^group\/AGENT\.md$/m);
    expect(listing).not.toContain('secret-alpha');
    expect(listing).not.toContain('alpha');
    expect(sameName).toMatch(/does not exist/);
    expect(sibling).toMatch(/refused path .*"\.\." is not allowed/);
    expect(hostPath).toMatch(/refused path .*outside the workspace|does not exist/);
    expect(escape).toMatch(/refused path/);
    expect(shell).toMatch(/^exit code [1-9]/);
    expect(shell.match(/No such file or directory/g)).toHaveLength(2);
    expect(shell).not.toContain(secret);
    expect(beta.stdout).toContain('beta results:');
    expect(beta.stdout).not.toContain(secret);
    expect(fs.existsSync(path.join(h.paths.groupsDir, 'beta', 'secret-alpha.txt'))).toBe(false);

    // Neither group's model requests carry the other's messages.
    const betaRequests = h.requestsOf('beta');
    const alphaRequests = h.requestsOf('alpha');
    expect(betaRequests.length).toBeGreaterThanOrEqual(2);
    expect(alphaRequests.length).toBeGreaterThanOrEqual(2);
    for (const r of betaRequests) {
      expect(r.rawBody).not.toContain(secret);
      expect(chatTextsOf(r.body)).toEqual([betaText]);
    }
    for (const r of alphaRequests) {
      expect(r.rawBody).not.toContain('what files can you find');
      expect(chatTextsOf(r.body)).toEqual([alphaText]);
    }
    // And beta's stored conversation holds nothing of alpha's.
    const betaSession = fs
      .readdirSync(path.join(h.paths.sessionsDir, 'beta'), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => fs.readFileSync(path.join(e.parentPath, e.name), 'utf8'))
      .join('\n');
    expect(betaSession).toContain('what files can you find');
    expect(betaSession).not.toContain(secret);

    // One container per group, alive at the same time.
    expect(h.started('alpha')).toHaveLength(1);
    expect(h.started('beta')).toHaveLength(1);
  }, 120_000);
});
