/**
 * The admin agent's config proposals (issue 11) on the real file store, patch checker, Cop and audit log:
 * only the owner's approval and the Cop's answer are scripted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConfigFileStore, hashText } from '../../host/config/config-file-store.ts';
import { describeReload, type ConfigReloadOutcome } from '../../host/config/config-reload.ts';
import type { RunIdentity } from '../../host/security/decisions.ts';
import { createConfigProposals, type ConfigProposal } from '../../host/config/config-proposals.ts';
import { configReferenceProblems } from '../../host/config/config-references.ts';
import { createCop, type CopMessage } from '../../host/security/cop/cop.ts';
import { createSecretScanner } from '../../host/security/secrets/index.ts';
import { redactFindings } from '../../host/security/secrets/redact-findings.ts';
import { openStore, type Store } from '../../host/store/store.ts';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.ts';

const exampleText = fs.readFileSync(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../config/config.example.toml'),
  'utf8',
);

const FILE = `# The owner's notes stay.
[assistant]
name = "Andy" # the trigger word is @Andy
timezone = "UTC"

[gateway]
daily_cap_usd = 5

# Family chat
[groups.family]
trigger = "mention"
`;

interface Asked {
  operation: string;
  reason: string;
  params: Record<string, unknown>;
}

let dir: string;
let store: Store;
let configFile: string;
let asked: Asked[];
let reloads: string[];
let copCalls: CopMessage[][];
let copAnswer: () => Promise<string>;
let ownerAnswer: (ask: Asked) => Promise<boolean> | boolean;
const scanner = createSecretScanner({ heldSecrets: [] });

function proposals(
  reload: () => Promise<ConfigReloadOutcome> = async () => ({ ok: true, detail: 'applied now' }),
) {
  return createConfigProposals({
    files: createConfigFileStore({ configFile }),
    exampleText,
    referenceProblems: (before, after) =>
      configReferenceProblems(before, after, (id) => store.groups.get(id) !== undefined, 'main'),
    redactText: (text) => redactFindings(text, scanner),
    cop: createCop({
      complete: async (messages) => {
        copCalls.push(messages);
        return copAnswer();
      },
    }),
    human: {
      async ask(_identity, operation, reason, params) {
        const ask = { operation, reason, params };
        asked.push(ask);
        return ownerAnswer(ask);
      },
    },
    taint: { get: () => ({ corruption: false, secret: false }) },
    audit: store.audit,
    reload: async (reason) => {
      reloads.push(reason);
      return reload();
    },
  });
}

const identity = (): RunIdentity => {
  const group = store.groups.get('main');
  if (!group) throw new Error('setup: no admin group');
  return { runId: 7, group, secretMounts: [] };
};

const propose = (changes: ConfigProposal['changes'], baseHash = hashText(FILE)) =>
  proposals().propose(identity(), { baseHash, changes, reason: 'the owner asked for it' });

const configAudit = () =>
  store.audit
    .tail(100)
    .filter((r) => r.operation.startsWith('config.'))
    .map((r) => ({ operation: r.operation, decision: r.decision, reason: r.reason, details: r.details }));

beforeEach(() => {
  dir = makeTempDir();
  configFile = path.join(dir, 'config.toml');
  fs.writeFileSync(configFile, FILE);
  store = openStore({ file: path.join(dir, 'carapace.db'), redact: (s) => s });
  store.groups.add({ id: 'main', channel: 'local', chatId: 'main', name: 'Admin', isAdmin: true });
  store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'Family', isAdmin: false });
  asked = [];
  reloads = [];
  copCalls = [];
  copAnswer = async () => '{"flagged": false, "reason": "a display name"}';
  ownerAnswer = () => true;
});
afterEach(() => {
  store.close();
  removeTempDir(dir);
});

describe('config proposals', () => {
  it('applies an approved change over the version read: comments kept, both hashes and the diff audited, the host asked to reload', async () => {
    const read = await proposals().read();
    expect(read).toEqual({ text: FILE, hash: hashText(FILE) });

    const result = await propose([{ key: 'assistant.name', value: 'Max' }], read.hash);

    expect(result).toEqual({
      status: 'applied',
      detail: 'Changed:\nassistant.name: "Andy" → "Max"\napplied now',
    });
    const text = fs.readFileSync(configFile, 'utf8');
    expect(text).toBe(FILE.replace('name = "Andy"', 'name = "Max"'));
    // The Cop saw the readable diff, the owner was asked with its verdict, bound to the base and the patch.
    expect(copCalls[0]?.[1]?.content).toContain(JSON.stringify('assistant.name: "Andy" → "Max"'));
    expect(asked).toEqual([
      {
        operation: 'config.propose',
        reason: 'a config change; the Cop passed it: a display name',
        params: {
          base_hash: read.hash,
          changes: [{ key: 'assistant.name', value: 'Max' }],
          diff: ['assistant.name: "Andy" → "Max"'],
          agent_reason: 'the owner asked for it',
        },
      },
    ]);
    expect(reloads).toHaveLength(1);
    const rows = configAudit();
    expect(rows.map((r) => [r.operation, r.decision])).toEqual([
      ['config.propose.cop', 'passed'],
      ['config.propose', 'applied'],
    ]);
    expect(JSON.parse(rows[1]?.details ?? '{}')).toMatchObject({
      baseHash: read.hash,
      newHash: hashText(text),
      diff: ['assistant.name: "Andy" → "Max"'],
    });
    // The replaced version is in the ring: `config rollback` can put it back.
    expect(createConfigFileStore({ configFile }).history()[0]).toMatchObject({ hash: read.hash });
  });

  it('shows a Cop flag, or a Cop that cannot answer, to the owner as a flag; the owner still decides', async () => {
    copAnswer = async () => '{"flagged": true, "reason": "an unfamiliar model"}';
    expect((await propose([{ key: 'assistant.timezone', value: 'Europe/Berlin' }])).status).toBe('applied');
    const hash = hashText(fs.readFileSync(configFile, 'utf8'));
    copAnswer = async () => {
      throw new Error('provider down');
    };
    ownerAnswer = () => false;
    expect((await propose([{ key: 'assistant.name', value: 'Max' }], hash)).status).toBe('denied');
    expect(asked.map((a) => a.reason)).toEqual([
      'a config change; FLAGGED by the Cop: an unfamiliar model',
      expect.stringMatching(
        /^a config change; FLAGGED by the Cop: cop unavailable: the provider call failed/,
      ),
    ]);
  });

  it('refuses protected keys and a raised spend cap without asking the Cop or the owner', async () => {
    for (const changes of [
      [{ key: 'provider.base_url', value: 'https://evil.example/v1' }],
      [{ key: 'security.approval_timeout_ms', value: 3_600_000 }],
      [{ key: 'groups.family.extra_mounts', value: [{ host_path: '/home' }] }],
      [{ key: 'gateway.daily_cap_usd', value: 50 }],
      // Setting the whole table reaches the protected key under it.
      [{ key: 'groups.family', value: { trigger: 'always', extra_mounts: [] } }],
    ]) {
      const result = await propose(changes);
      expect(result.status, JSON.stringify(changes)).toBe('refused');
      expect(result.detail).toMatch(/^Only the owner can change these/);
      expect(result.detail).toContain(
        changes[0]?.key === 'gateway.daily_cap_usd'
          ? 'raises the daily spend cap from 5 USD to 50 USD'
          : changes[0]?.key,
      );
    }
    expect(copCalls).toEqual([]);
    expect(asked).toEqual([]);
    expect(reloads).toEqual([]);
    expect(fs.readFileSync(configFile, 'utf8')).toBe(FILE);
    expect(configAudit().every((r) => r.decision === 'refused')).toBe(true);
  });

  it('refuses a change based on an older version without asking anyone, and says to read again', async () => {
    const result = await propose([{ key: 'assistant.name', value: 'Max' }], hashText('an older file'));
    expect(result.status).toBe('refused');
    expect(result.detail).toMatch(/changed since you read it.*read_config/);
    expect(copCalls).toEqual([]);
    expect(asked).toEqual([]);
    expect(fs.readFileSync(configFile, 'utf8')).toBe(FILE);
  });

  it('refuses to write when the file changed while the owner decided: the hand edit stays', async () => {
    const handEdit = FILE.replace('timezone = "UTC"', 'timezone = "Europe/Paris"');
    ownerAnswer = () => {
      fs.writeFileSync(configFile, handEdit);
      return true;
    };
    const result = await propose([{ key: 'assistant.name', value: 'Max' }]);
    expect(result.status).toBe('refused');
    expect(result.detail).toMatch(/changed since you read it/);
    expect(fs.readFileSync(configFile, 'utf8')).toBe(handEdit);
    expect(reloads).toEqual([]);
  });

  it('changes nothing when the owner denies', async () => {
    ownerAnswer = () => false;
    const result = await propose([{ key: 'assistant.name', value: 'Max' }]);
    expect(result).toEqual({
      status: 'denied',
      detail: 'The owner did not approve the change; nothing was changed.',
    });
    expect(fs.readFileSync(configFile, 'utf8')).toBe(FILE);
    expect(fs.existsSync(path.join(dir, 'config.history'))).toBe(false);
    expect(reloads).toEqual([]);
    expect(configAudit().map((r) => [r.operation, r.decision])).toEqual([
      ['config.propose.cop', 'passed'],
      ['config.propose', 'denied'],
    ]);
  });

  it('refuses what a start would refuse, with one line per problem, before anyone is asked', async () => {
    const bad = await propose([
      { key: 'runs.max_concurrent', value: 0 },
      { key: 'assistant.name', value: 'two words' },
    ]);
    expect(bad.status).toBe('refused');
    expect(bad.detail.split('\n').slice(1)).toEqual([
      expect.stringMatching(/assistant\.name: must be one word/),
      expect.stringMatching(/runs\.max_concurrent: .*1/),
    ]);
    expect((await propose([{ key: 'assistant..name', value: 'x' }])).status).toBe('refused');
    expect((await propose([{ key: 'assistant.name', value: null }])).status).toBe('refused');
    expect((await propose([{ key: 'assistant.name', value: 'Andy' }])).detail).toBe(
      'That changes nothing in the effective configuration.',
    );
    expect(asked).toEqual([]);
  });

  it('refuses settings for unknown groups, undeclared services and a web-reading admin group', async () => {
    const unknownGroup = await propose([{ key: 'groups.famly.trigger', value: 'always' }]);
    expect(unknownGroup.detail).toContain('there is no group "famly"');
    const lowerCap = await propose([{ key: 'gateway.group_caps_usd', value: { nobody: 1 } }]);
    expect(lowerCap.detail).toContain('there is no group "nobody"');
    const service = await propose([{ key: 'groups.family.services', value: ['web_search'] }]);
    expect(service.detail).toContain('groups.family.services: there is no service "web_search"');
    const cleanRoom = await propose([{ key: 'groups.main.services', value: ['web_fetch'] }]);
    expect(cleanRoom.status).toBe('refused');
    expect(cleanRoom.detail).toMatch(/admin group "main" is given web_fetch, which reads public content/);
    // A known group and a declared service pass the same checks.
    expect((await propose([{ key: 'groups.family.services', value: ['web_fetch'] }])).status).toBe('applied');
    expect(asked).toHaveLength(1);
  });

  it('hands the reload failure back as it is: the change was written, the running host did not take it', async () => {
    const result = await proposals(async () => ({
      ok: false,
      detail: 'health check failed; rolled back',
    })).propose(identity(), {
      baseHash: hashText(FILE),
      changes: [{ key: 'assistant.name', value: 'Max' }],
      reason: 'r',
    });
    expect(result.status).toBe('applied');
    expect(result.detail).toMatch(/The running host did not take it: health check failed; rolled back$/);
  });

  it('shows the agent the file with credentials redacted, and the hash of the real bytes', async () => {
    const withSecret = `${FILE}\n# mirror: https://backup:Sup3rS3cretPassw0rd@mirror.example.com/carapace\n`;
    fs.writeFileSync(configFile, withSecret);
    const read = await proposals().read();
    expect(read.hash).toBe(hashText(withSecret));
    expect(read.text).not.toContain('Sup3rS3cretPassw0rd');
    expect(read.text).toContain('[REDACTED]');
    expect(read.text).toContain('name = "Andy" # the trigger word is @Andy');
  });
});

describe('describeReload', () => {
  it('says what the running host did with the written file, and fails only when it did not take it', () => {
    const hash = 'c'.repeat(64);
    expect(describeReload({ kind: 'applied', hash, changes: [], atRestart: [] })).toEqual({
      ok: true,
      detail: 'applied to the running host, no restart needed',
    });
    expect(describeReload({ kind: 'applied', hash, changes: [], atRestart: ['provider.model'] }).detail).toBe(
      'applied to the running host; these take effect at the next restart: provider.model',
    );
    expect(describeReload({ kind: 'unchanged', hash }).ok).toBe(true);
    expect(describeReload({ kind: 'refused', hash, problems: ['a', 'b'] })).toEqual({
      ok: false,
      detail: 'the host refused the file and runs on the configuration it had:\n- a\n- b',
    });
    expect(describeReload({ kind: 'rolled-back', hash, problems: ['telegram: not connected'] })).toEqual({
      ok: false,
      detail:
        'it was applied, then rolled back because the host did not work with it:\n- telegram: not connected',
    });
  });
});
