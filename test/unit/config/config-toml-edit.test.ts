import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { editTomlText, mergePatch, parseConfigPath, TomlEditError } from '../../../host/config/toml-edit.ts';

const EXAMPLE_FILE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../config/config.example.toml',
);

const FILE = `# My assistant
[assistant]
name = "Andy"   # the trigger word is @Andy
# where I live
timezone = "UTC"

[groups.family]
trigger = "mention"
services = ["web_fetch"] # just this

[runs]
max_concurrent = 3
`;

describe('editTomlText', () => {
  it('rewrites a one-line inline table whole when a key inside it changes or is added', () => {
    const out = editTomlText('caps = { a = 1 } # usd\n', [
      { path: ['caps', 'a'], value: 2 },
      { path: ['caps', 'b c'], value: 3 },
    ]);
    expect(out).toBe('caps = { a = 2, "b c" = 3 } # usd\n');
  });

  it('rewrites only the value span, keeping comments and layout', () => {
    const out = editTomlText(FILE, [{ path: ['assistant', 'name'], value: 'Max' }]);
    expect(out).toBe(FILE.replace('name = "Andy"   #', 'name = "Max"   #'));
  });

  it('inserts a missing key after the last key of its table', () => {
    const out = editTomlText(FILE, [{ path: ['groups', 'family', 'contains_secrets'], value: true }]);
    expect(out).toBe(FILE.replace('# just this\n', '# just this\ncontains_secrets = true\n'));
  });

  it('appends a missing table at the end of the file', () => {
    const out = editTomlText(FILE, [{ path: ['groups', 'work', 'trigger'], value: 'always' }]);
    expect(out).toBe(`${FILE}\n[groups.work]\ntrigger = "always"\n`);
  });

  it('inserts a missing top-level key before the first table, and edits arrays on one line', () => {
    const out = editTomlText('# top\n[a]\nx = 1\n', [{ path: ['b'], value: [1, 'two'] }]);
    expect(out).toBe('# top\nb = [1, "two"]\n[a]\nx = 1\n');
    expect(editTomlText(FILE, [{ path: ['groups', 'family', 'services'], value: [] }])).toContain(
      'services = [] # just this',
    );
  });

  it('spreads an object value into one key per leaf and writes objects inside arrays inline', () => {
    const out = editTomlText(FILE, [
      { path: ['groups', 'family'], value: { trigger: 'always', extra_mounts: [{ host_path: '~/x' }] } },
    ]);
    expect(out).toContain('trigger = "always"\n');
    expect(out).toContain('extra_mounts = [{ host_path = "~/x" }]');
  });

  it('keeps a quoted key and escapes strings', () => {
    const text = '[groups."my group"]\ntrigger = "mention"\n';
    const out = editTomlText(text, [
      { path: parseConfigPath('groups."my group".trigger'), value: 'a "b"\n' },
    ]);
    expect(out).toBe('[groups."my group"]\ntrigger = "a \\"b\\"\\n"\n');
  });

  it('parses back to exactly the merged document for every key of the shipped example', () => {
    const text = fs.readFileSync(EXAMPLE_FILE, 'utf8');
    const doc = parseToml(text) as Record<string, unknown>;
    const patch = [
      { path: ['assistant', 'name'], value: 'Max' },
      { path: ['runs', 'max_concurrent'], value: 5 },
      { path: ['logging', 'level'], value: 'debug' },
      { path: ['gateway', 'daily_cap_usd'], value: 2.5 },
    ];
    const out = editTomlText(text, patch);
    expect(parseToml(out)).toEqual(mergePatch(doc, patch));
    const comments = (t: string) => t.split('\n').filter((l) => l.trimStart().startsWith('#'));
    expect(comments(out)).toEqual(comments(text));
  });

  it('refuses a value written over several lines instead of dropping its comments', () => {
    const text = '[groups.family]\nservices = [\n  "web_fetch", # needed\n]\n';
    expect(() => editTomlText(text, [{ path: ['groups', 'family', 'services'], value: [] }])).toThrow(
      /spans several lines/,
    );
    expect(() => editTomlText('s = """\nx\n"""\n', [{ path: ['s'], value: 'y' }])).toThrow(
      /multi-line string/,
    );
  });

  it('refuses a key inside an inline table, an array of tables, or a layout that would not parse back', () => {
    expect(() => editTomlText('a = { b = [\n1] }\n', [{ path: ['a', 'b'], value: 2 }])).toThrow(
      /spans several lines/,
    );
    // Dotted keys define [a] implicitly; appending an [a] header would redefine it.
    expect(() => editTomlText('a.b = 1\n', [{ path: ['a', 'c'], value: 2 }])).toThrow(TomlEditError);
    expect(() => editTomlText('[[x]]\ny = 1\n', [{ path: ['x', 'y'], value: 2 }])).toThrow(TomlEditError);
    expect(() => editTomlText(FILE, [{ path: ['assistant', 'name', 'x'], value: 2 }])).toThrow(/not a table/);
    expect(() => editTomlText(FILE, [{ path: ['assistant', 'name'], value: null }])).toThrow(
      /cannot be null/,
    );
  });

  it('reads key paths the way TOML writes keys', () => {
    expect(parseConfigPath('groups."a.b".trigger')).toEqual(['groups', 'a.b', 'trigger']);
    expect(() => parseConfigPath('groups..x')).toThrow(/not a key path/);
  });
});
