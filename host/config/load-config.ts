import fs from 'node:fs';
import { parse as parseToml, TomlError } from 'smol-toml';
import { ConfigError, type ConfigProblem } from './config-error.ts';
import { hostConfigSchema, type HostConfig } from './schema.ts';
import { problemsFromZod } from './zod-problems.ts';

export interface LoadConfigOptions {
  configFile: string;
  /** The shipped, commented example; its values are quoted back as examples in error messages. */
  exampleFile: string;
}

function readToml(file: string): { value?: Record<string, unknown>; problem?: ConfigProblem } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { value: {} };
    return { problem: { file, key: '', problem: `cannot read the file: ${(err as Error).message}` } };
  }
  try {
    return { value: parseToml(text) as Record<string, unknown> };
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

/** Parses and validates the user's config.toml; throws ConfigError listing every problem at once. */
export function loadConfig({ configFile, exampleFile }: LoadConfigOptions): HostConfig {
  const raw = readToml(configFile);
  if (raw.problem) throw new ConfigError([raw.problem]);
  const parsed = hostConfigSchema.safeParse(raw.value);
  if (parsed.success) return parsed.data;
  const example = readToml(exampleFile).value ?? {};
  throw new ConfigError(problemsFromZod(configFile, parsed.error, exampleLookup(example)));
}
