import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, type ConfigProblem } from '../../../host/config/config-error.ts';
import { loadConfig } from '../../../host/config/load-config.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import { useTempDirs } from '../../helpers/temp-dir.ts';

const EXAMPLE_FILE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../config/config.example.toml',
);

const tempDir = useTempDirs();
let configFile: string;

beforeEach(() => {
  configFile = path.join(tempDir(), 'config.toml');
});

function load(text?: string) {
  if (text !== undefined) fs.writeFileSync(configFile, text);
  return loadConfig({ configFile, exampleFile: EXAMPLE_FILE });
}

function problemsOf(text: string): ConfigProblem[] {
  try {
    load(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems;
    for (const p of problems) expect(p.file).toBe(configFile);
    return problems;
  }
  throw new Error(`expected a ConfigError for:\n${text}`);
}

function onlyProblem(text: string): ConfigProblem {
  const problems = problemsOf(text);
  expect(problems).toHaveLength(1);
  return problems[0] as ConfigProblem;
}

describe('loadConfig', () => {
  it('gives every default when the file does not exist', () => {
    expect(fs.existsSync(configFile)).toBe(false);
    const config = load();
    expect(config).toEqual(hostConfigSchema.parse({}));
    expect(config.assistant).toEqual({ name: 'Andy', timezone: 'UTC' });
    expect(config.runs.max_concurrent).toBe(3);
  });

  it('treats an empty file like an absent one', () => {
    expect(load('')).toEqual(hostConfigSchema.parse({}));
  });

  it('reads a valid file and fills in what it leaves out', () => {
    const config = load(
      [
        '[assistant]',
        'name = "Bob-2"',
        'timezone = "Europe/Berlin"',
        '[runs]',
        'max_concurrent = 5',
        'wall_time_ms = 60000',
        '[logging]',
        'level = "debug"',
      ].join('\n'),
    );
    expect(config.assistant).toEqual({ name: 'Bob-2', timezone: 'Europe/Berlin' });
    expect(config.runs.max_concurrent).toBe(5);
    expect(config.runs.wall_time_ms).toBe(60_000);
    expect(config.runs.max_attempts).toBe(3);
    expect(config.outbox).toEqual(hostConfigSchema.parse({}).outbox);
    expect(config.logging.level).toBe('debug');
  });

  it('rejects an unknown top-level key, naming it', () => {
    const p = onlyProblem('colour = "red"\n');
    expect(p.key).toBe('colour');
    expect(p.problem).toMatch(/unknown key "colour".*top level/);
  });

  it('rejects an unknown key inside a section with its dotted name', () => {
    const p = onlyProblem('[assistant]\nnick = "x"\n');
    expect(p.key).toBe('assistant.nick');
    expect(p.problem).toMatch(/unknown key "nick" in \[assistant\]/);
  });

  it('rejects a value of the wrong type and quotes the example value', () => {
    const p = onlyProblem('[runs]\nmax_concurrent = "three"\n');
    expect(p.key).toBe('runs.max_concurrent');
    expect(p.problem).toMatch(/expected number/);
    expect(p.example).toBe('max_concurrent = 3');
  });

  it('rejects a section given as a plain value', () => {
    const p = onlyProblem('assistant = "Andy"\n');
    expect(p.key).toBe('assistant');
    expect(p.problem).toMatch(/expected object/);
  });

  it('rejects numbers out of range and fractions where whole numbers are needed', () => {
    const low = onlyProblem('[runs]\nmax_concurrent = 0\n');
    expect(low.key).toBe('runs.max_concurrent');
    expect(low.problem).toMatch(/>=\s*1/);
    expect(low.example).toBe('max_concurrent = 3');

    const high = onlyProblem('[outbox]\nretry_max_ms = 99999999\n');
    expect(high.key).toBe('outbox.retry_max_ms');
    expect(high.problem).toMatch(/<=\s*3600000/);
    expect(high.example).toBe('retry_max_ms = 300000');

    expect(onlyProblem('[runs]\nmax_attempts = 1.5\n').key).toBe('runs.max_attempts');
  });

  it('rejects a time zone that is not an IANA name', () => {
    const p = onlyProblem('[assistant]\ntimezone = "Mars/Olympus_Mons"\n');
    expect(p.key).toBe('assistant.timezone');
    expect(p.problem).toMatch(/time zone/);
    expect(p.example).toBe('timezone = "UTC"');
  });

  it.each(['Andy Bot', '1andy', '@Andy', 'a'.repeat(33), '', 'Andy.'])(
    'rejects the assistant name %j',
    (name) => {
      const p = onlyProblem(`[assistant]\nname = ${JSON.stringify(name)}\n`);
      expect(p.key).toBe('assistant.name');
      expect(p.problem).toMatch(/one word/);
      expect(p.example).toBe('name = "Andy"');
    },
  );

  it('reports a TOML syntax error with its line and column', () => {
    const p = onlyProblem('[assistant]\ntimezone = "UTC"\nname = Andy\n');
    expect(p.key).toBe('');
    expect(p.problem).toMatch(/^line 3, column \d+: /);
    expect(p.example).toMatch(/double quotes/);
  });

  it('reports every problem at once, not just the first', () => {
    const problems = problemsOf(
      [
        'extra = 1',
        '[assistant]',
        'name = "1x"',
        'timezone = "Nowhere/Land"',
        '[runs]',
        'max_attempts = 99',
        '[logging]',
        'level = "loud"',
      ].join('\n'),
    );
    expect(problems.map((p) => p.key).sort()).toEqual(
      ['assistant.name', 'assistant.timezone', 'extra', 'logging.level', 'runs.max_attempts'].sort(),
    );
    const level = problems.find((p) => p.key === 'logging.level');
    expect(level?.problem).toMatch(/"debug"/);
    expect(level?.example).toBe('level = "info"');
  });

  it('puts the file, the key, the problem and the example into the error message', () => {
    let message = '';
    try {
      load('[runs]\nmax_concurrent = 0\n[assistant]\nbogus = true\n');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/2 problems/);
    expect(message).toContain(`${configFile}: runs.max_concurrent: `);
    expect(message).toContain('(for example: max_concurrent = 3)');
    expect(message).toContain(`${configFile}: assistant.bogus: unknown key`);
  });

  it('reports a config path that cannot be read as a file', () => {
    fs.mkdirSync(configFile);
    const err = (() => {
      try {
        load();
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0]?.problem).toMatch(/cannot read/);
  });
});

describe('config/config.example.toml', () => {
  // The example is the documentation of the defaults: if a default changes or a key is added without
  // updating the example, this fails.
  it('holds exactly the schema defaults, every key of them and nothing else', () => {
    const raw = parseToml(fs.readFileSync(EXAMPLE_FILE, 'utf8'));
    expect(JSON.parse(JSON.stringify(raw))).toEqual(hostConfigSchema.parse({}));
  });

  it('loads as a valid configuration', () => {
    expect(loadConfig({ configFile: EXAMPLE_FILE, exampleFile: EXAMPLE_FILE })).toEqual(
      hostConfigSchema.parse({}),
    );
  });
});
