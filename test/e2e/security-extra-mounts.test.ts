/**
 * Deleting files on a read-write extra mount is a write the policy decides (issue 12), also when the
 * command names no extra path: after a `cd` onto the mount a bare glob is relative to it, and a variable
 * may hold any path. Through a real container with the admin group's extra mount: each such command is
 * escalated (a `bash` decision row), and every command the run executed has its `bash.ran` row.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'smol-toml';
import { describeDocker } from '../helpers/docker-available.ts';
import {
  auditMark,
  auditSince,
  detailsOf,
  resultsOf,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import { startE2eHost, type E2eHost, type E2eHostOptions } from './e2e-harness.ts';

await describeDocker('e2e security: writes on a read-write extra mount are escalated', () => {
  let h: E2eHost;
  let root: string;
  let notes: string;

  beforeAll(async () => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-e2e-extra-')));
    notes = path.join(root, 'notes');
    fs.mkdirSync(notes);
    // The agent runs as another uid: the owner's folder must be writable for it, as a shared folder is.
    fs.chmodSync(notes, 0o777);
    const config = {
      groups: { main: { extra_mounts: [{ host_path: notes, container_path: 'notes', read_write: true }] } },
    } as unknown as E2eHostOptions['config'];
    h = await startE2eHost({ config });
    fs.writeFileSync(
      h.paths.allowlistFile,
      stringify({ allowed_roots: [{ path: root, allow_read_write: true }] }),
      { mode: 0o600 },
    );
  }, 180_000);
  afterAll(async () => {
    await h?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('a cd onto the mount before a glob, and a variable the gate cannot know, are escalated and audited', async () => {
    for (const name of ['keep.txt', 'a.txt', 'b.txt']) fs.writeFileSync(path.join(notes, name), name);
    fs.chmodSync(path.join(notes, 'keep.txt'), 0o666);
    const local = 'ls /workspace/extra/notes';
    const escalated = [
      // The value comes from a command: the gate cannot know it names a file on the mount.
      'f=$(ls -d /workspace/extra/notes/k*); rm -f -- "$f"; echo "rc=$?"',
      // The glob is relative to the mount once cd has gone there.
      'cd /workspace/extra/notes && rm -rf *; echo "rc=$?"',
    ];
    h.fake.setResponder(
      securityResponder({
        main: runTools([local, ...escalated].map((command) => ({ name: 'bash', arguments: { command } }))),
      }),
    );
    const mark = auditMark(h);
    const res = await h.send('main', 'tidy the notes');
    expect(res.code).toBe(0);
    const [listing, ...rest] = resultsOf(res.stdout);
    expect(listing).toMatch(/keep\.txt/);
    for (const result of rest) expect(result).toMatch(/rc=0/);
    // They really ran on the owner's folder (an untainted admin run may write; a tainted one would ask).
    expect(fs.readdirSync(notes)).toEqual([]);

    const runId = h.runs('main').at(-1)?.id;
    const rows = auditSince(h, mark).filter((r) => r.runId === runId);
    const decided = rows.filter((r) => r.operation === 'bash');
    expect(decided.map((r) => [detailsOf(r).command, detailsOf(r).class])).toEqual(
      escalated.map((c) => [c, 'escalate']),
    );
    for (const row of decided) expect(row.reason).toMatch(/may change files on an extra mount/);
    expect(rows.filter((r) => r.operation === 'bash.ran').map((r) => detailsOf(r).command)).toEqual([
      local,
      ...escalated,
    ]);
    expect(rows.filter((r) => r.operation === 'bash.gate_miss')).toEqual([]);
  }, 240_000);
});
