import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/store.ts';
import { createWebAuth } from '../../../host/web/web-auth.ts';
import { useCliFolders } from '../../helpers/run-cli.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const { dirs, cli } = useCliFolders(useTempDirs());

/** The console's sign-in on the data folder's database, as the host makes it. */
function withAuth<T>(fn: (auth: ReturnType<typeof createWebAuth>) => T): T {
  fs.mkdirSync(dirs.dataDir, { recursive: true });
  const store = openStore({ file: path.join(dirs.dataDir, 'carapace.db') });
  try {
    return fn(
      createWebAuth({
        sessions: store.webSessions,
        audit: store.audit,
        clock: { now: () => Date.now() },
        linkTtlMs: 600_000,
        sessionTtlMs: 86_400_000,
      }),
    );
  } finally {
    store.close();
  }
}

/** Signs browsers in as the console does; returns their ids, with a check of each against the store. */
function signInBrowsers(agents: string[]) {
  const signed = withAuth((auth) => agents.map((ua) => auth.signIn(auth.issueLink('cli').token, ua)));
  return {
    ids: signed.map((s) => s?.session.id ?? ''),
    /** Which of them the console would still let in. */
    live: () => withAuth((auth) => signed.map((x) => auth.authenticate(x?.cookieToken) !== undefined)),
  };
}

function auditRows() {
  const store = openStore({ file: path.join(dirs.dataDir, 'carapace.db') });
  const rows = store.audit.tail(100).filter((r) => r.decision === 'revoked');
  store.close();
  return rows;
}

describe('carapace web sessions and revoke', () => {
  it('lists the signed-in browsers with id, when signed in and last seen, and user agent', async () => {
    const b = signInBrowsers(['Firefox on the laptop', 'Chromium on the phone']);
    const r = await cli('web', 'sessions');
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => l.split('\t'));
    expect(lines.map((l) => l[0]).sort()).toEqual([...b.ids].sort());
    expect(lines.map((l) => l[5]).sort()).toEqual(['Chromium on the phone', 'Firefox on the laptop']);
    for (const l of lines) expect(l[1]).toMatch(/^\d{4}-\d\d-\d\dT/);
    const json = await cli('web', 'sessions', '--json');
    expect((JSON.parse(json.stdout.split('\n')[0] ?? '') as { userAgent: string }).userAgent).toBeTruthy();
  });

  it('revokes one session by a prefix of its id, audited as the CLI, and the console refuses it at once', async () => {
    const b = signInBrowsers(['one', 'two']);
    const r = await cli('web', 'revoke', (b.ids[0] ?? '').slice(0, 6));
    expect(r).toMatchObject({ code: 0, stdout: `revoked ${b.ids[0]}\n` });
    expect(b.live()).toEqual([false, true]);
    expect(auditRows().map((row) => [row.approver, JSON.parse(row.details ?? '{}')])).toEqual([
      ['cli', { session: b.ids[0] }],
    ]);
    expect((await cli('web', 'sessions')).stdout).not.toContain(b.ids[0]);
  });

  it('revokes every session with --all', async () => {
    const b = signInBrowsers(['one', 'two', 'three']);
    expect((await cli('web', 'revoke', '--all')).code).toBe(0);
    expect(b.live()).toEqual([false, false, false]);
    expect(auditRows()).toHaveLength(3);
  });

  it('revokes nothing for an id no live session has, or a prefix that names more than one', async () => {
    const b = signInBrowsers(['one', 'two']);
    const unknown = await cli('web', 'revoke', 'zzzz');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no live web console session starts with "zzzz"');
    const ambiguous = await cli('web', 'revoke', '');
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toContain('names 2 sessions');
    expect(b.live()).toEqual([true, true]);
    expect((await cli('web', 'revoke')).code).toBe(2);
  });
});
