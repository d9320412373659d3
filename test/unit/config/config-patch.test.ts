import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatProblem } from '../../../host/config/config-error.ts';
import { diffConfigs, formatDiff } from '../../../host/config/config-diff.ts';
import { checkConfigPatch } from '../../../host/config/config-patch.ts';
import type { PatchEntry } from '../../../host/config/toml-edit.ts';

const exampleText = fs.readFileSync(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config/config.example.toml'),
  'utf8',
);

const FILE = `# mine
[assistant]
name = "Andy" # trigger

[gateway]
daily_cap_usd = 5
group_caps_usd = { family = 1 }

[groups.family]
trigger = "mention"
`;

function check(patch: PatchEntry[], text = FILE) {
  return checkConfigPatch({ file: 'config.toml', text, patch, exampleText });
}

function ok(patch: PatchEntry[]) {
  const r = check(patch);
  if (!r.ok) throw new Error(r.problems.map(formatProblem).join('\n'));
  return r;
}

describe('checkConfigPatch', () => {
  it('returns the edited text, the effective diff and no protected key for an ordinary change', () => {
    const r = ok([{ path: ['assistant', 'name'], value: 'Max' }]);
    expect(r.text).toContain('name = "Max" # trigger');
    expect(r.config.assistant.name).toBe('Max');
    expect(formatDiff(r.changes)).toBe('assistant.name: "Andy" → "Max"');
    expect(r.protected).toEqual([]);
  });

  it('validates the result with the startup schema, one problem per line', () => {
    const r = check([
      { path: ['assistant', 'name'], value: 'two words' },
      { path: ['runs', 'max_concurrent'], value: 0 },
    ]);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const lines = r.problems.map(formatProblem);
    expect(lines).toHaveLength(2);
    expect(lines.join('\n')).toMatch(/assistant\.name/);
    expect(lines.join('\n')).toMatch(/runs\.max_concurrent/);
  });

  it('refuses an unknown key and a broken current file', () => {
    const unknown = check([{ path: ['assistant', 'nmae'], value: 'Max' }]);
    expect(unknown.ok).toBe(false);
    const broken = check([{ path: ['assistant', 'name'], value: 'Max' }], 'name = \n');
    expect(broken.ok).toBe(false);
  });

  it('names every protected key a patch touches, including a table above one', () => {
    const r = ok([
      { path: ['provider', 'base_url'], value: 'https://evil.example/v1' },
      { path: ['security', 'approval_timeout_ms'], value: 60_000 },
      { path: ['groups', 'family'], value: { extra_mounts: [{ host_path: '~/x' }] } },
      { path: ['assistant', 'name'], value: 'Max' },
    ]);
    expect(r.protected.map((t) => t.key)).toEqual([
      'provider.base_url',
      'security.approval_timeout_ms',
      'groups.family',
    ]);
  });

  it('counts raising a spend cap as protected, lowering it not', () => {
    expect(ok([{ path: ['gateway', 'daily_cap_usd'], value: 2 }]).protected).toEqual([]);
    expect(ok([{ path: ['gateway', 'daily_cap_usd'], value: 9 }]).protected.map((t) => t.key)).toEqual([
      'gateway.daily_cap_usd',
    ]);
    expect(
      ok([{ path: ['gateway', 'group_caps_usd', 'family'], value: 3 }]).protected.map((t) => t.why),
    ).toEqual(["raises group family's daily spend cap from 1 USD to 3 USD"]);
    // A new per-group override above the global cap raises that group's cap.
    const r = ok([{ path: ['gateway', 'group_caps_usd'], value: { family: 1, work: 8 } }]);
    expect(r.protected.map((t) => t.key)).toEqual(['gateway.group_caps_usd.work']);
  });
});

describe('diffConfigs', () => {
  it('lists changed, added and removed leaves with old → new', () => {
    const changes = diffConfigs({ a: { b: 1, c: [1] }, d: 'x' }, { a: { b: 2, c: [1] }, e: true });
    expect(formatDiff(changes)).toBe(
      `a.b: 1 → 2 (applies at restart)\nd: "x" → (unset) (applies at restart)\ne: (unset) → true (applies at restart)`,
    );
    expect(formatDiff([])).toBe('no change to the effective configuration');
  });

  it("hides a URL's password and query values, which may be access tokens, in what it shows", () => {
    const changes = diffConfigs(
      { channels: { whatsapp: { websocket_url: 'wss://relay.example/ws' } } },
      {
        channels: {
          whatsapp: { websocket_url: 'wss://me:hunter2@relay.example/ws?access_token=s3cr3t&v=2' },
        },
      },
    );
    const text = formatDiff(changes);
    expect(text).toBe(
      'channels.whatsapp.websocket_url: "wss://relay.example/ws" → "wss://me:***@relay.example/ws?access_token=***&v=***" (applies at restart)',
    );
    expect(text).not.toMatch(/hunter2|s3cr3t/);
  });
});
