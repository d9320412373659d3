import fs from 'node:fs';
import { parse as parseToml, TomlError } from 'smol-toml';
import { ConfigError, type ConfigProblem } from './config-error.ts';
import { hostConfigSchema, type HostConfig } from './schema.ts';
import { problemsFromZod } from './zod-problems.ts';
import { errorMessage } from '../errors/error-message.ts';
import { errorCode } from '../errors/error-code.ts';

export interface LoadConfigOptions {
  configFile: string;
  /** The shipped, commented example; its values are quoted back as examples in error messages. */
  exampleFile: string;
}

function readText(file: string): { text?: string; problem?: ConfigProblem } {
  try {
    return { text: fs.readFileSync(file, 'utf8') };
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return { text: '' };
    return { problem: { file, key: '', problem: `cannot read the file: ${errorMessage(err)}` } };
  }
}

function parseTomlText(
  file: string,
  text: string,
): { value?: Record<string, unknown>; problem?: ConfigProblem } {
  try {
    return { value: parseToml(text) };
  } catch (err) {
    if (err instanceof TomlError) {
      const first = err.message.split('\n')[0] ?? err.message;
      return {
        problem: {
          file,
          key: '',
          problem: `line ${err.line}, column ${err.column}: ${first.replace(/^Invalid TOML document: /, '')}`,
          example: 'name = "Andy" (strings need double quotes; sections look like [assistant])',
        },
      };
    }
    throw err;
  }
}

function readToml(file: string): { value?: Record<string, unknown>; problem?: ConfigProblem } {
  const read = readText(file);
  return read.problem ? { problem: read.problem } : parseTomlText(file, read.text ?? '');
}

function lookup(value: unknown, parts: (string | number)[]): unknown {
  let cur = value;
  for (const p of parts) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[p];
  }
  return cur;
}

export function exampleLookup(exampleDoc: Record<string, unknown>) {
  return (parts: (string | number)[]): string | undefined => {
    const v = lookup(exampleDoc, parts);
    const last = parts[parts.length - 1];
    if (v === undefined || typeof v === 'object' || last === undefined) return undefined;
    return `${String(last)} = ${JSON.stringify(v)}`;
  };
}

export type CheckedConfigText = { ok: true; config: HostConfig } | { ok: false; problems: ConfigProblem[] };

/**
 * Checks the text of a config file exactly as a start does: TOML, then the schema, every problem at once
 * with an example from the shipped file. A running host checks a changed file with this too.
 */
export function checkConfigText(file: string, text: string, exampleFile: string): CheckedConfigText {
  const raw = parseTomlText(file, text);
  if (raw.problem) return { ok: false, problems: [raw.problem] };
  const parsed = hostConfigSchema.safeParse(raw.value);
  if (parsed.success) return { ok: true, config: parsed.data };
  const example = readToml(exampleFile).value ?? {};
  return { ok: false, problems: problemsFromZod(file, parsed.error, exampleLookup(example)) };
}

/** Parses and validates the user's config.toml; throws ConfigError listing every problem at once. */
export function loadConfig({ configFile, exampleFile }: LoadConfigOptions): HostConfig {
  const read = readText(configFile);
  if (read.problem) throw new ConfigError([read.problem]);
  const checked = checkConfigText(configFile, read.text ?? '', exampleFile);
  if (!checked.ok) throw new ConfigError(checked.problems);
  return checked.config;
}
