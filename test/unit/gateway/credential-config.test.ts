/**
 * `[credentials.<name>]` and the groups' `credentials`: the schema, the allowlist language, the start
 * checks and what an agent's config proposal may and may not do with them (issue 25).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseToml } from 'smol-toml';
import { checkConfigPatch } from '../../../host/config/config-patch.ts';
import { credentialConfigProblems } from '../../../host/gateway/credential/credential-grants.ts';
import { appliesAtRestart } from '../../../host/config/reload-scope.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import type { PatchEntry } from '../../../host/config/toml-edit.ts';
import {
  isAllowed,
  parseAllowRules,
  unsafePathReason,
} from '../../../host/gateway/credential/credential-allowlist.ts';
import { credentialHeader, credentialSchema } from '../../../host/gateway/credential/credential-config.ts';
import { credentialTrust } from '../../../host/gateway/credential/credential-trust.ts';
import { credentialCommandSetup } from '../../../host/gateway/credential/command-setup.ts';
import { commandEnvironment } from '../../../container-agent/src/tools/bash.ts';

const exampleText = fs.readFileSync(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../config/config.example.toml'),
  'utf8',
);

const FILE = `[credentials.recipes]
kind = "git"
value_env = "RECIPES_TOKEN"
remote = "https://github.com/alice/recipes.git"

[credentials.notes]
kind = "http"
value_env = "NOTES_KEY"
base_url = "https://notes.example.com/api"
allow = ["GET /notes/**"]

[groups.family]
trigger = "mention"
`;

function check(patch: PatchEntry[], text = FILE) {
  const r = checkConfigPatch({ file: 'config.toml', text, patch, exampleText });
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return r;
}

function problemsOf(input: unknown): string[] {
  const r = credentialSchema.safeParse(input);
  return r.success ? [] : r.error.issues.map((i) => i.message);
}

describe('the credential schema', () => {
  it('accepts an http credential with an allowlist and a git credential with a remote', () => {
    const config = hostConfigSchema.parse(parseToml(FILE));
    expect(Object.keys(config.credentials)).toEqual(['recipes', 'notes']);
  });

  it('refuses plain http to anything but loopback, a URL with a password, and a value in place of a name', () => {
    expect(
      problemsOf({ kind: 'http', value_env: 'K', base_url: 'http://api.example.com', allow: ['GET /'] })[0],
    ).toMatch(/must use https/);
    expect(
      problemsOf({ kind: 'http', value_env: 'K', base_url: 'http://127.0.0.1:9/x', allow: ['GET /'] }),
    ).toEqual([]);
    expect(
      problemsOf({ kind: 'git', value_env: 'K', remote: 'https://me:tok@github.com/a/b.git' })[0],
    ).toMatch(/must not carry a user or password/);
    expect(
      problemsOf({ kind: 'git', value_env: 'ghp_abc-def', remote: 'https://github.com/a/b.git' })[0],
    ).toMatch(/environment variable name/);
  });

  it('allows nothing by default: an http credential without an allowlist is refused', () => {
    expect(problemsOf({ kind: 'http', value_env: 'K', base_url: 'https://a.example' })).toEqual([
      expect.stringMatching(/needs allow/),
    ]);
    expect(
      problemsOf({
        kind: 'http',
        value_env: 'K',
        base_url: 'https://a.example',
        allow: ['FETCH /x', 'GET x', 'GET /a/../b', 'GET /a**'],
      }),
    ).toHaveLength(4);
  });

  it('refuses a header that does not carry the value exactly once, or one that steers the connection', () => {
    expect(
      problemsOf({
        kind: 'git',
        value_env: 'K',
        remote: 'https://g.example/r.git',
        header: 'Authorization: token',
      })[0],
    ).toMatch(/exactly one \{value\}/);
    expect(
      problemsOf({
        kind: 'git',
        value_env: 'K',
        remote: 'https://g.example/r.git',
        header: 'Host: {value}',
      })[0],
    ).toMatch(/cannot carry a credential/);
  });

  it('renders the header forms: a bearer token by default, HTTP Basic for git, a custom header', () => {
    const http = credentialSchema.parse({
      kind: 'http',
      value_env: 'K',
      base_url: 'https://a.example',
      allow: ['GET /'],
    });
    expect(credentialHeader(http).render('s3cret')).toBe('Bearer s3cret');
    const git = credentialSchema.parse({ kind: 'git', value_env: 'K', remote: 'https://g.example/r.git' });
    expect(credentialHeader(git)).toMatchObject({ name: 'authorization' });
    expect(credentialHeader(git).render('tok')).toBe(
      `Basic ${Buffer.from('x-access-token:tok').toString('base64')}`,
    );
    const custom = credentialSchema.parse({ ...http, header: 'X-Api-Key: {value}' });
    expect(credentialHeader(custom)).toMatchObject({ name: 'x-api-key' });
    expect(credentialHeader(custom).render('v')).toBe('v');
  });

  it('counts every trust property it leaves out as true (fail closed)', () => {
    const c = credentialSchema.parse({
      kind: 'git',
      value_env: 'K',
      remote: 'https://g.example/r.git',
      public_sink: false,
    });
    expect(credentialTrust(c)).toEqual({
      public_source: true,
      secret_data: true,
      public_sink: false,
      dangerous_writes: true,
    });
  });
});

describe('the allowlist', () => {
  const rules = parseAllowRules(['GET /repos/alice/recipes/**', 'GET,POST /notes/*/items']);

  it('matches methods and path patterns: * within a segment, ** across any depth', () => {
    expect(isAllowed(rules, 'GET', '/repos/alice/recipes')).toBe(true);
    expect(isAllowed(rules, 'GET', '/repos/alice/recipes/contents/a/b.md')).toBe(true);
    expect(isAllowed(rules, 'POST', '/notes/42/items')).toBe(true);
    expect(isAllowed(rules, 'POST', '/repos/alice/recipes/issues')).toBe(false);
    expect(isAllowed(rules, 'GET', '/notes/42/x/items')).toBe(false);
    expect(isAllowed(rules, 'GET', '/repos/alice/recipes-evil')).toBe(false);
    expect(isAllowed(rules, 'DELETE', '/notes/1/items')).toBe(false);
  });

  it('refuses paths an upstream could read as another path', () => {
    for (const p of [
      '/repos/alice/recipes/../../bob',
      '/repos/alice/recipes/%2e%2e/x',
      '/repos/alice/recipes/a%2Fb',
      '/repos//alice/recipes',
      '/repos/alice/recipes/a\\b',
    ]) {
      expect(unsafePathReason(p), p).toBeDefined();
      expect(isAllowed(rules, 'GET', p), p).toBe(false);
    }
  });
});

describe('credentials at start and in config proposals', () => {
  const base = hostConfigSchema.parse(parseToml(FILE));

  it('refuses a group given a credential that does not exist, and the admin group one that reads public content', () => {
    const config = hostConfigSchema.parse(
      parseToml(`${FILE}credentials = ["recipe"]\n[groups.main]\ncredentials = ["notes"]\n`),
    );
    expect(credentialConfigProblems(config, 'main')).toEqual([
      expect.stringMatching(/groups\.family\.credentials: there is no credential "recipe"/),
      expect.stringMatching(/groups\.main\.credentials: notes reads content strangers may write/),
    ]);
    expect(credentialConfigProblems(base, 'main')).toEqual([]);
  });

  it('lets an agent propose using an existing credential in a group, as a change the owner is told about', () => {
    const r = check([{ path: ['groups', 'family', 'credentials'], value: ['recipes'] }]);
    expect(r.protected).toEqual([]);
    expect(r.effects).toEqual([
      expect.objectContaining({
        verdict: 'ask',
        effect: expect.stringContaining(
          'lets group family use the recipes credential (clone, fetch and push https://github.com/alice/recipes.git',
        ),
      }),
    ]);
  });

  it('never lets an agent change where a value comes from or widen an allowlist', () => {
    expect(check([{ path: ['credentials', 'notes', 'value_env'], value: 'PROVIDER_KEY' }]).protected).toEqual(
      [expect.objectContaining({ key: 'credentials.notes.value_env' })],
    );
    expect(
      check([{ path: ['credentials', 'notes', 'allow'], value: ['GET /**', 'POST /**'] }]).protected,
    ).toHaveLength(1);
    expect(
      check([
        {
          path: ['credentials', 'evil'],
          value: {
            kind: 'http',
            value_env: 'NOTES_KEY',
            base_url: 'https://evil.example',
            allow: ['GET /**'],
          },
        },
      ]).protected,
    ).toHaveLength(1);
  });

  it("applies a group's credentials and the credential table without a restart", () => {
    expect(appliesAtRestart('groups.family.credentials')).toBe(false);
    expect(appliesAtRestart('credentials.notes.allow')).toBe(false);
    expect(appliesAtRestart('groups.family.git_email')).toBe(false);
  });
});

describe("what a run's commands get", () => {
  const config = hostConfigSchema.parse(
    parseToml(
      `${FILE}credentials = ["recipes", "notes"]\ngit_name = "Family bot"\ngit_email = "bot@example.com"\n`,
    ),
  );

  it('routes the git remote through the host, sends the run key to the routes only, and sets the identity', () => {
    const setup = credentialCommandSetup(
      config.credentials,
      config.groups.family,
      'http://10.0.0.1:7/credentials',
      'cr-k',
    );
    expect(setup?.gitConfig).toEqual([
      {
        key: 'url.http://10.0.0.1:7/credentials/recipes.insteadOf',
        value: 'https://github.com/alice/recipes.git',
      },
      { key: 'http.http://10.0.0.1:7/credentials/.extraHeader', value: 'Authorization: Bearer cr-k' },
    ]);
    expect(setup?.env).toMatchObject({
      CARAPACE_CREDENTIALS_URL: 'http://10.0.0.1:7/credentials',
      CARAPACE_CREDENTIAL_KEY: 'cr-k',
      GIT_AUTHOR_NAME: 'Family bot',
      GIT_COMMITTER_EMAIL: 'bot@example.com',
    });
    const env = commandEnvironment({}, { timezone: 'UTC', home: '/home/agent', ...(setup ? { setup } : {}) });
    expect(env).toMatchObject({
      GIT_CONFIG_COUNT: '3',
      GIT_CONFIG_KEY_0: 'safe.directory',
      GIT_CONFIG_KEY_1: 'url.http://10.0.0.1:7/credentials/recipes.insteadOf',
      CARAPACE_CREDENTIAL_KEY: 'cr-k',
    });
  });

  it('gives a group without credentials or identity nothing', () => {
    expect(
      credentialCommandSetup(config.credentials, undefined, 'http://h/credentials', 'cr-k'),
    ).toBeUndefined();
  });
});
