import fs from 'node:fs';
import { parseEnv } from 'node:util';
import { errorMessage } from '../errors/error-message.ts';
import { errorCode } from '../errors/error-code.ts';

export interface SecretSource {
  /** The value of a secret variable, from the environment or `<config dir>/.env` (the environment wins). */
  get(name: string): string | undefined;
  /** Every secret value the host holds, for exact-match scanning and log redaction. */
  held(): string[];
  /** Problems found while loading (e.g. a .env readable by others), for `doctor` and the start-up log. */
  warnings: string[];
}

export function loadSecrets({ envFile, env }: { envFile: string; env: NodeJS.ProcessEnv }): SecretSource {
  const warnings: string[] = [];
  let fileVars: Record<string, string> = {};
  try {
    const stat = fs.statSync(envFile);
    if ((stat.mode & 0o077) !== 0) {
      warnings.push(`${envFile} can be read by other users; restrict it with: chmod 600 ${envFile}`);
    }
    fileVars = parseEnv(fs.readFileSync(envFile, 'utf8')) as Record<string, string>;
  } catch (err) {
    if (errorCode(err) !== 'ENOENT') warnings.push(`cannot read ${envFile}: ${errorMessage(err)}`);
  }
  const used = new Set<string>(Object.keys(fileVars));
  const get = (name: string) => {
    used.add(name);
    const v = env[name] ?? fileVars[name];
    return v === '' ? undefined : v;
  };
  return {
    get,
    // Both copies count: a .env value overridden by the environment is still a secret that must not leak.
    held: () => [...used].flatMap((n) => [env[n], fileVars[n]]).filter((v): v is string => !!v),
    warnings,
  };
}

/**
 * The variables a config section names in its `*_env` keys, at any depth: an account's table
 * (`[channels.telegram.work]`) and a table inside one (`webhook.secret_token_env`) hold them too. The host
 * reads them before its scanner is made, so that every one is held from the start.
 */
export function secretVariablesIn(section: unknown): string[] {
  if (typeof section !== 'object' || section === null) return [];
  return Object.entries(section).flatMap(([key, value]) =>
    key.endsWith('_env') && typeof value === 'string' ? [value] : secretVariablesIn(value),
  );
}

/** Exact-value redaction, the baseline every log line gets even before the full secret scanner loads. */
export function exactRedactor(values: () => string[]): (s: string) => string {
  return (s: string) => {
    let out = s;
    for (const v of values()) if (v.length >= 8 && out.includes(v)) out = out.split(v).join('[REDACTED]');
    return out;
  };
}
