/**
 * The admin agent's config proposals (issue 11) on the real file store, patch checker, Cop and audit log:
 * only the owner's approval and the Cop's answer are scripted.
 */
import { DEFAULT_PRICES } from '../../../host/gateway/spend/price-table.ts';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createConfigFileStore, hashText } from '../../../host/config/config-file-store.ts';
import { checkConfigPatch } from '../../../host/config/config-patch.ts';
import { describeReload, type ConfigReloadOutcome } from '../../../host/config/config-reload.ts';
import type { HostConfig } from '../../../host/config/schema.ts';
import { parseConfigPath } from '../../../host/config/toml-edit.ts';
import { allowedModels } from '../../../host/gateway/config.ts';
import type { RunIdentity } from '../../../host/security/decisions.ts';
import { createConfigProposals, type ConfigProposal } from '../../../host/config/config-proposals.ts';
import { configReferenceProblems } from '../../../host/config/config-references.ts';
import { createCop, type CopMessage } from '../../../host/security/cop/cop.ts';
import { createSecretScanner } from '../../../host/security/secrets/index.ts';
import { redactFindings } from '../../../host/security/secrets/redact-findings.ts';
import { openStore, type Store } from '../../../host/store/store.ts';
import { makeTempDir, removeTempDir } from '../../helpers/temp-dir.ts';

const exampleText = fs.readFileSync(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config/config.example.toml'),
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
      [{ key: 'runner.kubernetes.gateway_address', value: '203.0.113.9:443' }],
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

  it("audits the Cop's verdict and the owner's denial with the base and what the Cop said, no taint column", async () => {
    copAnswer = async () => '{"flagged": true, "reason": "an unfamiliar model"}';
    ownerAnswer = () => false;
    expect((await propose([{ key: 'assistant.name', value: 'Max' }])).status).toBe('denied');
    const rows = store.audit.tail(10).filter((r) => r.operation.startsWith('config.'));
    expect(
      rows.map((r) => [
        r.operation,
        r.decision,
        r.reason,
        r.taint,
        r.approver,
        JSON.parse(r.details ?? 'null'),
      ]),
    ).toEqual([
      ['config.propose.cop', 'flagged', 'an unfamiliar model', null, null, { baseHash: hashText(FILE) }],
      [
        'config.propose',
        'denied',
        'not approved by the owner (FLAGGED by the Cop: an unfamiliar model)',
        null,
        null,
        { baseHash: hashText(FILE), diff: expect.any(Array), effects: [] },
      ],
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

  it('lets the agent give a group an existing credential only through the owner, told what it allows, and never change one', async () => {
    const text = `${FILE}\n[credentials.recipes]\nkind = "git"\nvalue_env = "RECIPES_TOKEN"\nremote = "https://github.com/alice/recipes.git"\n`;
    fs.writeFileSync(configFile, text);
    const proposeOn = (changes: ConfigProposal['changes']) =>
      proposals().propose(identity(), { baseHash: hashText(text), changes, reason: 'the family asked' });
    ownerAnswer = () => false;
    const granted = await proposeOn([{ key: 'groups.family.credentials', value: ['recipes'] }]);
    expect(granted.status).toBe('denied');
    expect(asked[0]?.reason).toContain(
      'lets group family use the recipes credential (clone, fetch and push https://github.com/alice/recipes.git through the host)',
    );
    for (const changes of [
      [{ key: 'credentials.recipes.value_env', value: 'E2E_PROVIDER_KEY' }],
      [{ key: 'credentials.recipes.remote', value: 'https://github.com/mallory/x.git' }],
      [{ key: 'credentials.recipes.dangerous_writes', value: false }],
    ]) {
      const changed = await proposeOn(changes);
      expect(changed.status, JSON.stringify(changes)).toBe('refused');
      expect(changed.detail).toMatch(/^Only the owner can change these/);
    }
    const unknown = await proposeOn([{ key: 'groups.family.credentials', value: ['recipe'] }]);
    expect(unknown.detail).toContain('groups.family.credentials: there is no credential "recipe"');
    expect(asked).toHaveLength(1);
    expect(fs.readFileSync(configFile, 'utf8')).toBe(text);
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

/** A file where prices, a private host and a secret-holding group give changes something to lift. */
const PRICED = `[gateway]
daily_cap_usd = 5
group_caps_usd = { family = 2 }
prices = { "gpt-4.1-mini" = { input_per_mtok_usd = 0.4, output_per_mtok_usd = 1.6 }, "gpt-4.1" = { input_per_mtok_usd = 2, output_per_mtok_usd = 8 } }

[web_fetch]
allow_private_hosts = ["nas.lan"]

[groups.family]
contains_secrets = true
services = []
`;

describe('config proposals judged by their effect', () => {
  const proposePriced = (changes: ConfigProposal['changes']) => {
    fs.writeFileSync(configFile, PRICED);
    return proposals().propose(identity(), { baseHash: hashText(PRICED), changes, reason: 'tidying up' });
  };

  it('puts each spend, reach and protection effect to the owner stated plainly, never as an ordinary change', async () => {
    ownerAnswer = () => false;
    const cases: [ConfigProposal['changes'], string][] = [
      [
        [{ key: 'gateway.prices."gpt-4.1-mini"', value: { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } }],
        'this removes the spend cap for model gpt-4.1-mini: its use would be counted as costing nothing',
      ],
      [
        [
          {
            key: 'gateway.prices."gpt-4.1-mini"',
            value: { input_per_mtok_usd: 0.1, output_per_mtok_usd: 1.6 },
          },
        ],
        'this lowers the price counted for model gpt-4.1-mini (input 0.4 USD → 0.1 USD, output 1.6 USD → 1.6 USD per million tokens): the spend cap then allows more of it',
      ],
      // A model without any price is charged the dearest known one; only a price of 0 makes it free.
      [
        [
          { key: 'provider.fallback_models', value: ['local-llama'] },
          { key: 'gateway.prices."local-llama"', value: { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
        ],
        'this lets agents use model local-llama, which has no price: the spend cap does not count its use',
      ],
      [
        [
          { key: 'gateway.allowed_models', value: ['gpt-4.1', 'tiny-unpriced'] },
          { key: 'gateway.prices."tiny-unpriced"', value: { input_per_mtok_usd: 0, output_per_mtok_usd: 0 } },
        ],
        'this lets agents use model tiny-unpriced, which has no price: the spend cap does not count its use',
      ],
      // A flat price for a model the table prices higher past 200K prompt tokens lowers its long prompts.
      [
        [
          { key: 'gateway.allowed_models', value: ['gemini-2.5-pro'] },
          {
            key: 'gateway.prices."gemini-2.5-pro"',
            value: { input_per_mtok_usd: 1.25, output_per_mtok_usd: 10 },
          },
        ],
        'this lowers the price counted for model gemini-2.5-pro (input 1.25 USD → 1.25 USD, output 10 USD → 10 USD per million tokens; for long prompts input 2.5 USD → 1.25 USD, output 15 USD → 10 USD): the spend cap then allows more of it',
      ],
      [
        [{ key: 'web_fetch.allow_private_hosts', value: ['nas.lan', '10.0.0.5'] }],
        'this lets web_fetch reach 10.0.0.5, a host on the private network',
      ],
      [
        [{ key: 'groups.family.services', value: ['web_fetch'] }],
        'this lets group family call the web_fetch service',
      ],
      [
        [{ key: 'groups.family.contains_secrets', value: false }],
        'this turns off secret protection for group family: runs that read its workspace are no longer marked as holding secrets',
      ],
    ];
    for (const [changes, effect] of cases) {
      asked = [];
      const result = await proposePriced(changes);
      expect(result.status, JSON.stringify(changes)).toBe('denied');
      expect(asked).toHaveLength(1);
      expect(asked[0]?.reason).toMatch(/^a config change with effects to weigh: /);
      expect(asked[0]?.reason).toContain(effect);
      // The effect is bound into the approval's parameters too, and audited with the decision.
      expect(asked[0]?.params.effects).toContain(effect);
    }
    expect(configAudit().filter((r) => r.decision === 'denied')).toHaveLength(cases.length);
  });

  it('refuses a provider kind that moves the key elsewhere, and a cap raised per group, without asking anyone', async () => {
    const kind = await proposePriced([{ key: 'provider.kind', value: 'anthropic' }]);
    expect(kind.status).toBe('refused');
    expect(kind.detail).toContain(
      'provider.base_url (sends the provider key to https://api.anthropic.com instead of https://api.openai.com/v1)',
    );
    expect(kind.detail).toContain('provider.api_key_env (uses the secret in ANTHROPIC_API_KEY');
    const cap = await proposePriced([{ key: 'gateway.group_caps_usd', value: { family: 2, work: 9 } }]);
    expect(cap.status).toBe('refused');
    expect(cap.detail).toContain("raises group work's daily spend cap from 5 USD to 9 USD");
    expect(asked).toEqual([]);
    expect(copCalls).toEqual([]);
  });

  it('asks about a dearer price, a lower cap or a new priced model as ordinary changes', async () => {
    for (const changes of [
      [{ key: 'gateway.prices."gpt-4.1-mini"', value: { input_per_mtok_usd: 1, output_per_mtok_usd: 4 } }],
      [{ key: 'gateway.daily_cap_usd', value: 3 }],
      [{ key: 'provider.fallback_models', value: ['gpt-4.1'] }],
    ]) {
      asked = [];
      await proposePriced(changes);
      expect(asked.map((a) => a.reason)).toEqual(['a config change; the Cop passed it: a display name']);
    }
  });
});

/**
 * The property: for random patches over the keys that steer spend, reach, secrets and protections (and
 * harmless ones), no patch whose effect an independent oracle calls protected reaches the owner as an
 * ordinary change. The oracle reasons in dollars, not in key names: taking the prices before the change
 * as the true ones, how many dollars a group can spend on a model per day after it.
 */
describe('config proposals, property', () => {
  const MODELS = ['gpt-4.1-mini', 'gpt-4.1', 'local-llama', 'o3'];
  const random = (seed: number) => () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };

  function randomPatch(next: () => number): ConfigProposal['changes'] {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
    const subset = <T>(xs: readonly T[]) => xs.filter(() => next() < 0.4);
    const price = () => pick([0, 0.1, 0.4, 2, 8]);
    const generators: (() => ConfigProposal['changes'][number])[] = [
      () => ({ key: 'gateway.daily_cap_usd', value: pick([1, 5, 10]) }),
      () => {
        const caps: Record<string, number> = next() < 0.5 ? { family: pick([1, 2, 4]) } : {};
        return { key: 'gateway.group_caps_usd', value: caps };
      },
      () => ({
        key: `gateway.prices.${JSON.stringify(pick(MODELS))}`,
        value: { input_per_mtok_usd: price(), output_per_mtok_usd: price() },
      }),
      () => ({ key: 'provider.fallback_models', value: subset(MODELS) }),
      () => ({ key: 'gateway.allowed_models', value: subset(MODELS) }),
      () => ({ key: 'provider.model', value: pick(MODELS) }),
      () => ({ key: 'provider.kind', value: pick(['openai', 'anthropic']) }),
      () => ({ key: 'web_fetch.allow_private_hosts', value: subset(['nas.lan', '10.0.0.5', 'printer.lan']) }),
      () => ({ key: 'groups.family.contains_secrets', value: next() < 0.5 }),
      () => ({ key: 'groups.family.services', value: subset(['web_fetch']) }),
      () => ({ key: 'assistant.name', value: pick(['Andy', 'Max']) }),
      () => ({ key: 'runs.max_attempts', value: pick([1, 2, 3]) }),
    ];
    const count = 1 + Math.floor(next() * 3);
    const patch = Array.from({ length: count }, () => pick(generators)());
    // One value per key: a patch naming a key twice is not what an agent sends.
    return [...new Map(patch.map((c) => [c.key, c])).values()];
  }

  function protectedByOracle(before: HostConfig, after: HostConfig): string[] {
    // The oracle prices a model as the product promises, not through its code: the file's entry, else the
    // shipped table's (these model names are its own), else the dearest price either knows.
    const found: string[] = [];
    const reachable = (c: HostConfig) => allowedModels(c.gateway, c.provider);
    const priceOf = (c: HostConfig, model: string) => {
      const written = c.gateway.prices[model] ?? DEFAULT_PRICES[model];
      if (written) return written;
      const all = [...Object.values(DEFAULT_PRICES), ...Object.values(c.gateway.prices)];
      return {
        input_per_mtok_usd: Math.max(...all.map((p) => p.input_per_mtok_usd)),
        output_per_mtok_usd: Math.max(...all.map((p) => p.output_per_mtok_usd)),
      };
    };
    const caps = (c: HostConfig) => ({
      family: c.gateway.group_caps_usd.family ?? c.gateway.daily_cap_usd,
      other: c.gateway.daily_cap_usd,
    });
    // The most real dollars a group can spend in a day, through any model it may use: a model counted
    // cheaper than it is buys more than the cap, an unpriced one without end.
    const dollars = (c: HostConfig, group: 'family' | 'other', side: 'input' | 'output') => {
      const field = side === 'input' ? 'input_per_mtok_usd' : 'output_per_mtok_usd';
      let most = 0;
      for (const model of reachable(c)) {
        const counted = priceOf(c, model)?.[field] ?? 0;
        const truth = priceOf(before, model)?.[field] ?? 0;
        most = Math.max(
          most,
          counted === 0 ? Number.POSITIVE_INFINITY : (caps(c)[group] * (truth || counted)) / counted,
        );
      }
      return most;
    };
    for (const group of ['family', 'other'] as const)
      for (const side of ['input', 'output'] as const)
        if (dollars(after, group, side) > dollars(before, group, side)) found.push('spend');
    if (after.web_fetch.allow_private_hosts.some((h) => !before.web_fetch.allow_private_hosts.includes(h)))
      found.push('reach');
    const services = (c: HostConfig) => c.groups.family?.services ?? [];
    if (services(after).some((s) => !services(before).includes(s))) found.push('reach');
    if (before.provider.base_url !== after.provider.base_url) found.push('secrets');
    if (before.provider.api_key_env !== after.provider.api_key_env) found.push('secrets');
    if (before.groups.family?.contains_secrets && !after.groups.family?.contains_secrets)
      found.push('protection');
    return found;
  }

  it('sends no patch with a protected effect to the owner as an ordinary change (300 random patches)', async () => {
    ownerAnswer = () => false;
    const next = random(23);
    const seen = { protectedAsked: 0, protectedRefused: 0, ordinaryAsked: 0 };
    for (let i = 0; i < 300; i++) {
      const changes = randomPatch(next);
      const checked = checkConfigPatch({
        file: configFile,
        text: PRICED,
        patch: changes.map((c) => ({ path: parseConfigPath(c.key), value: c.value })),
        exampleText,
      });
      if (!checked.ok) continue;
      const oracle = protectedByOracle(checked.before, checked.config);
      asked = [];
      fs.writeFileSync(configFile, PRICED);
      const result = await proposals().propose(identity(), {
        baseHash: hashText(PRICED),
        changes,
        reason: 'random',
      });
      const why = `${JSON.stringify(changes)} → ${oracle.join(',')}`;
      if (oracle.length === 0) {
        if (asked.length > 0) seen.ordinaryAsked++;
        continue;
      }
      if (result.status === 'refused') {
        seen.protectedRefused++;
        continue;
      }
      expect(asked, why).toHaveLength(1);
      expect(asked[0]?.reason, why).toMatch(/^a config change with effects to weigh: this /);
      seen.protectedAsked++;
    }
    // The generator reaches every outcome, so the property is not true by emptiness.
    expect(seen.protectedAsked).toBeGreaterThan(20);
    expect(seen.protectedRefused).toBeGreaterThan(20);
    expect(seen.ordinaryAsked).toBeGreaterThan(5);
  });
});
