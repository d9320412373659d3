import { beforeEach, describe, expect, it } from 'vitest';
import { type BashClassifier } from '../../../container-agent/src/bash-gate/index.ts';
import type { RunIdentity } from '../../../host/security/decisions.ts';
import { createBashLedger } from '../../../host/security/policies/bash-ledger.ts';
import { createBashReports } from '../../../host/security/taint/bash-reports.ts';
import {
  commandReadsSecretMount,
  createSecretReads,
  secretMountOf,
} from '../../../host/security/taint/secret-reads.ts';
import { createTaintRegistry } from '../../../host/security/taint/taint.ts';
import type { Store } from '../../../host/store/store.ts';
import { usePolicyGround } from '../../helpers/policy-ground.ts';

const PROJECT = '/workspace/project';
let classifier: BashClassifier;
let store: Store;
const ground = usePolicyGround();
beforeEach(() => ({ classifier, store } = ground()));

const reads = (command: string) => commandReadsSecretMount([PROJECT], command, classifier.classify(command));

describe('which reads reach a mount that held secrets', () => {
  it('counts file paths inside the mount and folders above it, after resolving them as the host sees them', () => {
    expect(secretMountOf([PROJECT], '/workspace/project/src/config.js')).toBe(PROJECT);
    expect(secretMountOf([PROJECT], '/workspace')).toBe(PROJECT);
    expect(secretMountOf([PROJECT], '../project/x')).toBe(PROJECT);
    expect(secretMountOf([PROJECT], '/workspace/group/notes.md')).toBeUndefined();
    expect(secretMountOf([PROJECT], 'notes.md')).toBeUndefined();
    expect(secretMountOf([PROJECT], '/workspace/projects-old/x')).toBeUndefined();
    expect(secretMountOf([], '/workspace/project/x')).toBeUndefined();
  });

  it('lets commands through that only touch the group folder or other places, and names what reaches the mount', () => {
    for (const command of [
      'ls -la',
      'cat notes.md',
      'wc -l /workspace/group/a.txt',
      'grep -r TODO .',
      'ls /tmp',
    ])
      expect(reads(command), command).toBeUndefined();
    const reaching: [string, RegExp][] = [
      ['cat /workspace/project/README.md', /lies in \/workspace\/project/],
      ['cat "/workspace/project/app config.js"', /lies in/],
      ['grep -r KEY /workspace', /lies in/],
      ['cat /w*/p*/x', /may match paths in/],
      ['ls /workspace/pro?ect', /may match paths in/],
      ['cat ../project/x', /out of the group folder/],
      ['cat ~/x', /home folder/],
      ['cat $HOME/x', /expands/],
      ['cd; cat x', /changes to a folder/],
      ['head --file=/workspace/project/x', /lies in/],
      ['python3 script.py', /may run programs/],
      ['curl -s http://example.com/', /may run programs/],
    ];
    for (const [command, why] of reaching) expect(reads(command), command).toMatch(why);
  });

  it('says nothing for runs without secret mounts, whatever the command', () => {
    expect(commandReadsSecretMount([], 'python3 x.py', classifier.classify('python3 x.py'))).toBeUndefined();
  });
});

describe('secret taint from reads', () => {
  function setup(
    secretMounts: string[],
    sharedMounts: string[] = [],
    initial = { corruption: true, secret: false },
  ) {
    const grown: string[] = [];
    const taint = createTaintRegistry({
      initial: () => initial,
      onTainted: (_runId, t) => grown.push(JSON.stringify(t)),
    });
    const secretReads = createSecretReads({ taint, audit: store.audit });
    const ran = createBashReports({
      classifier,
      ledger: createBashLedger(),
      taint,
      audit: store.audit,
      secretReads,
    });
    const identity = {
      runId: 5,
      group: store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'main', isAdmin: true }),
      secretMounts,
      sharedMounts,
    } as RunIdentity;
    return { taint, secretReads, ran, identity, grown };
  }

  it('marks a run that reads a file in a secret mount, once, with an audit row; other reads leave it alone', () => {
    const s = setup([PROJECT]);
    s.secretReads.fileRead(s.identity, { path: '/workspace/group/AGENT.md', tool: 'read_file' });
    expect(s.taint.get(5).secret).toBe(false);
    s.secretReads.fileRead(s.identity, { path: '/workspace/project/src/db.js', tool: 'read_file' });
    s.secretReads.fileRead(s.identity, { path: '/workspace/project/README.md', tool: 'grep' });
    expect(s.taint.get(5)).toEqual({ corruption: true, secret: true });
    const rows = store.audit.tail(10).filter((r) => r.operation === 'file.read');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ decision: 'tainted', taint: 'corruption+secret' });
    expect(rows[0]?.reason).toContain('/workspace/project/src/db.js');
  });

  it('marks a run whose reported command may read the mount, and not one whose command stays in the group folder', () => {
    const s = setup([PROJECT]);
    s.ran(s.identity, { command: 'cat notes.md', via: 'local', reason: '' });
    expect(s.taint.get(5).secret).toBe(false);
    s.ran(s.identity, { command: 'cat /workspace/project/.npmrc.example', via: 'local', reason: '' });
    expect(s.taint.get(5).secret).toBe(true);
    expect(store.audit.tail(10).map((r) => r.operation)).toContain('bash.read');
  });

  it('never marks a run whose mounts held no secrets', () => {
    const s = setup([]);
    s.secretReads.fileRead(s.identity, { path: '/workspace/project/src/db.js', tool: 'read_file' });
    s.ran(s.identity, { command: 'cat /workspace/project/x', via: 'local', reason: '' });
    expect(s.taint.get(5).secret).toBe(false);
    expect(s.grown).toEqual([]);
  });

  // Found by the injection score (persist through a shared folder): a group wrote a folder the admin group
  // mounts, and the next admin run read the words uncorrupted.
  it('corrupts a clean run that reads inside a mount another group writes, by file tool or command', () => {
    const shared = '/workspace/extra/shared';
    const clean = { corruption: false, secret: false };
    const byTool = setup([], [shared], clean);
    byTool.secretReads.fileRead(byTool.identity, { path: '/workspace/group/AGENT.md', tool: 'read_file' });
    expect(byTool.taint.get(5)).toEqual(clean);
    byTool.secretReads.fileRead(byTool.identity, { path: `${shared}/todo.md`, tool: 'read_file' });
    expect(byTool.taint.get(5)).toEqual({ corruption: true, secret: false });
    const row = store.audit.tail(10).find((r) => r.operation === 'file.read');
    expect(row?.reason).toMatch(
      /^corruption taint: read_file read .*todo\.md in \/workspace\/extra\/shared, which another group mounts read-write/,
    );
    byTool.ran({ ...byTool.identity, runId: 6 }, { command: 'cat notes.md', via: 'local', reason: '' });
    expect(byTool.taint.get(6)).toEqual(clean);
    byTool.ran(
      { ...byTool.identity, runId: 6 },
      { command: `cat ${shared}/todo.md`, via: 'local', reason: '' },
    );
    expect(byTool.taint.get(6)).toEqual({ corruption: true, secret: false });
  });
});
