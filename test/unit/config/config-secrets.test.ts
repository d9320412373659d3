import fs from 'node:fs';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { exactRedactor, loadSecrets, secretVariablesIn } from '../../../host/config/secrets.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const tempDir = useTempDirs();
let envFile: string;

beforeEach(() => {
  envFile = path.join(tempDir(), '.env');
});

function writeEnv(text: string, mode = 0o600): void {
  fs.writeFileSync(envFile, text);
  // Set explicitly: the umask would otherwise decide what the test checks.
  fs.chmodSync(envFile, mode);
}

describe('loadSecrets', () => {
  it('works without a .env file, from the environment alone', () => {
    const s = loadSecrets({ envFile, env: { OPENAI_API_KEY: 'sk-from-environment' } });
    expect(s.warnings).toEqual([]);
    expect(s.get('OPENAI_API_KEY')).toBe('sk-from-environment');
    expect(s.get('MISSING')).toBeUndefined();
  });

  it('reads .env, and the environment wins over the file', () => {
    writeEnv('SHARED=from-file-value\nFILE_ONLY="quoted file value"\n# a comment\nEMPTY=\n');
    const s = loadSecrets({ envFile, env: { SHARED: 'from-environment', ENV_ONLY: 'only-in-environment' } });
    expect(s.warnings).toEqual([]);
    expect(s.get('SHARED')).toBe('from-environment');
    expect(s.get('FILE_ONLY')).toBe('quoted file value');
    expect(s.get('ENV_ONLY')).toBe('only-in-environment');
    expect(s.get('EMPTY')).toBeUndefined();
  });

  it('held() lists the values of the .env variables and of every variable asked for', () => {
    writeEnv('SHARED=from-file-value\nFILE_ONLY=file-only-value\n');
    const s = loadSecrets({
      envFile,
      env: { SHARED: 'from-environment', ASKED: 'asked-for-value', PATH: '/usr/bin' },
    });
    expect(s.held()).toContain('from-environment');
    expect(s.held()).toContain('file-only-value');
    // Unrelated environment variables are not secrets; one that was asked for is.
    expect(s.held()).not.toContain('/usr/bin');
    expect(s.held()).not.toContain('asked-for-value');
    s.get('ASKED');
    expect(s.held()).toContain('asked-for-value');
    expect(s.held()).not.toContain('');
  });

  it.each([0o644, 0o640, 0o604])('warns when .env has mode %s (readable by others)', (mode) => {
    writeEnv('KEY=value-of-the-key\n', mode);
    const s = loadSecrets({ envFile, env: {} });
    expect(s.warnings).toHaveLength(1);
    expect(s.warnings[0]).toContain(envFile);
    expect(s.warnings[0]).toContain(`chmod 600 ${envFile}`);
    // The warning does not stop the secrets from loading.
    expect(s.get('KEY')).toBe('value-of-the-key');
  });

  it('does not warn about a .env only its owner can read', () => {
    writeEnv('KEY=value-of-the-key\n', 0o600);
    expect(loadSecrets({ envFile, env: {} }).warnings).toEqual([]);
  });

  it('warns, instead of throwing, when the .env path cannot be read', () => {
    fs.mkdirSync(envFile, { mode: 0o700 });
    const s = loadSecrets({ envFile, env: { KEY: 'from-environment' } });
    expect(s.warnings.some((w) => w.startsWith(`cannot read ${envFile}`))).toBe(true);
    expect(s.get('KEY')).toBe('from-environment');
  });
});

describe('exactRedactor', () => {
  it('replaces every occurrence of a held value of 8 characters or more', () => {
    const redact = exactRedactor(() => ['sk-secret-123', 'another-token']);
    expect(redact('key sk-secret-123 and sk-secret-123, also another-token.')).toBe(
      'key [REDACTED] and [REDACTED], also [REDACTED].',
    );
  });

  it('leaves values shorter than 8 characters alone (they would mangle ordinary text)', () => {
    const redact = exactRedactor(() => ['1234567', 'abc']);
    expect(redact('code 1234567 abc')).toBe('code 1234567 abc');
    expect(exactRedactor(() => ['12345678'])('code 12345678')).toBe('code [REDACTED]');
  });

  it('asks for the values at each call, so secrets loaded later are redacted too', () => {
    const held: string[] = [];
    const redact = exactRedactor(() => held);
    expect(redact('token-abcdefgh')).toBe('token-abcdefgh');
    held.push('abcdefgh');
    expect(redact('token-abcdefgh')).toBe('token-[REDACTED]');
  });

  it('redacts what loadSecrets holds', () => {
    writeEnv('PROVIDER_KEY=sk-live-0123456789\n');
    const secrets = loadSecrets({ envFile, env: {} });
    const redact = exactRedactor(() => secrets.held());
    expect(redact('Authorization: Bearer sk-live-0123456789')).toBe('Authorization: Bearer [REDACTED]');
  });
});

describe('secretVariablesIn', () => {
  it("names every `*_env` variable of a parsed [channels], inside an account's table and a table in it", () => {
    expect(
      secretVariablesIn({
        'telegram.work': {
          bot_token_env: 'WORK_BOT_TOKEN',
          owner_user_id: 1,
          webhook: { url: 'https://example.org/hook', secret_token_env: 'WORK_HOOK_SECRET' },
        },
        'whatsapp.home': { websocket_url: 'wss://example.org' },
        local: {},
        slack: { bot_token_env: 'SLACK_BOT_TOKEN', app_token_env: 42 },
      }),
    ).toEqual(['WORK_BOT_TOKEN', 'WORK_HOOK_SECRET', 'SLACK_BOT_TOKEN']);
  });
});
