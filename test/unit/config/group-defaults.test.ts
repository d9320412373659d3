import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatProblem } from '../../../host/config/config-error.ts';
import { capsWithAccounts, groupDefaults } from '../../../host/config/group-defaults.ts';
import { checkConfigText } from '../../../host/config/load-config.ts';
import { protectedTouches } from '../../../host/config/protected-keys.ts';
import { appliesAtRestart } from '../../../host/config/reload-scope.ts';
import { assertStartableConfig } from '../../../host/config/service-grants.ts';
import type { HostConfig } from '../../../host/config/schema.ts';
import { groupCap } from '../../../host/gateway/spend/spend-cap.ts';
import { createServiceRegistry } from '../../../host/services/service-registry.ts';

const EXAMPLE = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../config/config.example.toml',
);

function config(text: string): HostConfig {
  const checked = checkConfigText('config.toml', text, EXAMPLE);
  if (!checked.ok) throw new Error(checked.problems.map(formatProblem).join('\n'));
  return checked.config;
}

function problems(text: string): string[] {
  const checked = checkConfigText('config.toml', text, EXAMPLE);
  if (checked.ok) throw new Error('expected the config to be refused');
  return checked.problems.map(formatProblem);
}

const CREDENTIALS = `
[credentials.github]
kind = "git"
remote = "https://github.com/acme/app.git"
value_env = "GITHUB_TOKEN"
[credentials.tracker]
kind = "git"
remote = "https://github.com/acme/tracker.git"
value_env = "TRACKER_TOKEN"
`;

const HOST = `
[assistant]
persona = "Friendly and brief."
[gateway]
daily_cap_usd = 5
[gateway.group_caps_usd]
standup = 0.5
[channels.telegram.family]
owner_user_id = 42
[channels.telegram.work]
owner_user_id = 42
bot_token_env = "TELEGRAM_WORK_TOKEN"
persona = "Formal; answers in English."
daily_cap_usd = 2
credentials = ["github"]
[groups.standup]
persona = "Terse: bullet points only."
credentials = ["tracker"]
[groups.quiet]
credentials = []
${CREDENTIALS}`;

const work = (id: string) => ({ id, channel: 'telegram.work', isAdmin: false });

describe('per-account defaults of persona, caps and credentials', () => {
  const c = config(HOST);

  it("gives a group its own setting over its account's, and its account's over the host-wide one", () => {
    expect(groupDefaults(c, work('standup'))).toEqual({
      persona: { value: 'Terse: bullet points only.', setting: '[groups.standup].persona' },
      dailyCap: { value: 0.5, setting: '[gateway].group_caps_usd."standup"' },
      credentials: { value: ['tracker'], setting: '[groups.standup].credentials' },
    });
    expect(groupDefaults(c, work('clients'))).toEqual({
      persona: { value: 'Formal; answers in English.', setting: '[channels.telegram.work].persona' },
      dailyCap: { value: 2, setting: '[channels.telegram.work].daily_cap_usd' },
      credentials: { value: ['github'], setting: '[channels.telegram.work].credentials' },
    });
    expect(groupDefaults(c, { id: 'kids', channel: 'telegram.family', isAdmin: false })).toEqual({
      persona: { value: 'Friendly and brief.', setting: '[assistant].persona' },
      dailyCap: { value: 5, setting: '[gateway].daily_cap_usd' },
      credentials: { value: [], setting: '[groups.kids].credentials' },
    });
  });

  it("lets a group's empty credentials list refuse the account's credentials", () => {
    expect(groupDefaults(c, work('quiet')).credentials.value).toEqual([]);
  });

  it("never gives the admin group an account's defaults", () => {
    const admin = groupDefaults(c, { id: 'main', channel: 'telegram.work', isAdmin: true });
    expect(admin.credentials.value).toEqual([]);
    expect(admin.dailyCap).toEqual({ value: 5, setting: '[gateway].daily_cap_usd' });
    expect(admin.persona.value).toBe('Friendly and brief.');
  });

  it('falls back to the host-wide settings once the account is gone from the config', () => {
    const start = HOST.indexOf('[channels.telegram.work]');
    const after = config(HOST.slice(0, start) + HOST.slice(HOST.indexOf('[groups.standup]')));
    expect(groupDefaults(after, work('clients'))).toMatchObject({
      persona: { value: 'Friendly and brief.' },
      dailyCap: { value: 5 },
      credentials: { value: [] },
    });
  });

  it("reads the default account's defaults from today's single table", () => {
    const single = config(
      `[channels.telegram]\nowner_user_id = 42\npersona = "Pirate."\ndaily_cap_usd = 1\n`,
    );
    expect(groupDefaults(single, { id: 'crew', channel: 'telegram', isAdmin: false })).toMatchObject({
      persona: { value: 'Pirate.', setting: '[channels.telegram].persona' },
      dailyCap: { value: 1, setting: '[channels.telegram].daily_cap_usd' },
    });
  });

  it("counts the account's cap where the gateway and the router check caps, naming the setting to raise", () => {
    const caps = capsWithAccounts(c, (id) => [work('clients'), work('standup')].find((g) => g.id === id));
    expect(groupCap(caps, 'clients')).toMatchObject({
      usd: 2,
      setting: '[channels.telegram.work].daily_cap_usd',
    });
    expect(groupCap(caps, 'standup')).toMatchObject({ usd: 0.5 });
    expect(groupCap(caps, 'elsewhere')).toMatchObject({ usd: 5, setting: '[gateway].daily_cap_usd' });
  });

  it("keeps the account's defaults out of the channel's own settings and checks them by their own rules", () => {
    const bad = problems(`[channels.telegram.work]\nowner_user_id = 42\ndaily_cap_usd = -1\npersona = ""\n`);
    expect(bad.sort()).toEqual([
      expect.stringContaining('channels.telegram.work.daily_cap_usd: Too small'),
      expect.stringContaining('channels.telegram.work.persona: must not be empty'),
    ]);
    // Beside account tables, a default is a top-level setting: which accounts it was meant for is a guess.
    expect(
      problems(`[channels.telegram]\npersona = "x"\n[channels.telegram.work]\nowner_user_id = 42\n`),
    ).toEqual([expect.stringContaining('mixes one account')]);
  });

  it('refuses to start with an account credential that does not exist', () => {
    const typo = config(HOST.replace('credentials = ["github"]', 'credentials = ["githbu"]'));
    const registry = createServiceRegistry({});
    expect(() => assertStartableConfig(typo, registry, 'main')).toThrow(
      /channels\.telegram\.work\.credentials: there is no credential "githbu"/,
    );
  });

  it('applies edits of the defaults at a reload, not a restart', () => {
    expect(appliesAtRestart('channels."telegram.work".persona')).toBe(false);
    expect(appliesAtRestart('channels."telegram.work".daily_cap_usd')).toBe(false);
    expect(appliesAtRestart('channels.telegram.credentials')).toBe(false);
    expect(appliesAtRestart('channels."telegram.work".owner_user_id')).toBe(true);
  });

  it("keeps an agent from proposing an account's credentials or owner, in a named account too", () => {
    const keys = (path: string[]) => protectedTouches([{ path, value: 'x' }], c, c).map((t) => t.key);
    expect(keys(['channels', 'telegram', 'work', 'credentials'])).toHaveLength(1);
    expect(keys(['channels', 'telegram', 'work', 'owner_user_id'])).toHaveLength(1);
    expect(keys(['channels', 'telegram', 'work', 'persona'])).toEqual([]);
  });
});
