/**
 * The argument rules on their own, without the parser: option scanning, the sed script reader and
 * the awk program check.
 */
import { describe, expect, it } from 'vitest';
import { checkAwkProgram } from '../../../container-agent/src/bash-gate/awk-rule.ts';
import {
  createDefaultCommandRules,
  networkCommandNames,
} from '../../../container-agent/src/bash-gate/command-rules.ts';
import { scanOptions } from '../../../container-agent/src/bash-gate/option-scan.ts';
import type { OptionSpec } from '../../../container-agent/src/bash-gate/option-scan.ts';
import { checkSedScript } from '../../../container-agent/src/bash-gate/sed-rule.ts';
import type { SyntaxNode } from '../../../container-agent/src/bash-gate/syntax-tree.ts';
import type { WordInfo } from '../../../container-agent/src/bash-gate/word-analysis.ts';

const NODE: SyntaxNode = { type: 'word', named: true, field: null, start: 0, end: 0, children: [] };

function fixed(value: string): WordInfo {
  return { node: NODE, text: value, value, prefix: value, splits: false };
}
function computed(text: string, prefix = '', splits = false): WordInfo {
  return { node: NODE, text, value: null, prefix, splits };
}

const SPEC: OptionSpec = {
  allowUnknown: true,
  shortWithValue: 'o',
  longWithValue: ['output'],
  longFlags: ['compact', 'compress'],
  deniedShort: { z: 'z runs things' },
  deniedLong: { 'compress-program': 'runs a program' },
};

describe('scanOptions', () => {
  it('finds denied options in clusters, with attached values and by abbreviation', () => {
    expect(scanOptions('t', [fixed('-az')], SPEC).finding?.reason).toBe('z runs things');
    expect(scanOptions('t', [fixed('--compress-program=sh')], SPEC).finding?.reason).toBe('runs a program');
    expect(scanOptions('t', [fixed('--compress-prog'), fixed('sh')], SPEC).finding?.reason).toBe(
      'runs a program',
    );
    // `--compress` is itself an option: an exact match wins, as in getopt_long.
    expect(scanOptions('t', [fixed('--compress')], SPEC).finding).toBeNull();
    expect(scanOptions('t', [fixed('file'), fixed('-z')], SPEC).finding?.reason).toBe('z runs things');
  });

  it('does not read option values or words after -- as options', () => {
    expect(scanOptions('t', [fixed('-o'), fixed('-z')], SPEC).finding).toBeNull();
    expect(scanOptions('t', [fixed('-o-z')], SPEC).finding).toBeNull();
    expect(scanOptions('t', [fixed('--output'), fixed('--compress-program=x')], SPEC).finding).toBeNull();
    expect(scanOptions('t', [fixed('--'), fixed('-z'), computed('$x')], SPEC)).toMatchObject({
      finding: null,
      operands: [{ value: '-z' }, { text: '$x' }],
    });
  });

  it('refuses computed words that could be options, accepts ones that cannot', () => {
    expect(scanOptions('t', [computed('$x')], SPEC).finding?.reason).toMatch(/could be an option/);
    expect(scanOptions('t', [computed('$x', 'src/', true)], SPEC).finding?.reason).toMatch(
      /could be an option/,
    );
    expect(scanOptions('t', [computed('"-$x"', '-')], SPEC).finding?.reason).toMatch(/could be an option/);
    expect(scanOptions('t', [computed('"src/$x"', 'src/')], SPEC).finding).toBeNull();
    expect(scanOptions('t', [fixed('-o'), computed('"$out"')], SPEC).finding).toBeNull();
  });

  it('escalates unknown options in strict mode and stops at the first operand when asked', () => {
    const strict: OptionSpec = { ...SPEC, allowUnknown: false, shortFlags: 'a' };
    expect(scanOptions('t', [fixed('-b')], strict).finding?.reason).toBe(
      't option -b is not on the local allowlist',
    );
    expect(scanOptions('t', [fixed('--bogus')], strict).finding?.reason).toBe(
      't option --bogus is not on the local allowlist',
    );
    const posix: OptionSpec = { ...strict, stopAtFirstOperand: true };
    expect(scanOptions('t', [fixed('prog'), fixed('-z'), computed('$f')], posix).finding).toBeNull();
  });
});

describe('checkSedScript', () => {
  it.each([
    ['p', null],
    ['s/a/b/g', null],
    ['s/e/w/p', null],
    ['s|a|b|2g', null],
    ['s/[/]/x/', null],
    ['/re/I,+3d', null],
    ['\\%path%d', null],
    ['1~2{s/a/b/;p}', null],
    ['$!{N;D}', null],
    [':a;N;$!ba;s/\\n/ /g', null],
    ['y/abc/def/', null],
    ['a\\\ntext e and w', null],
    ['1i hello e w r', null],
    ['# comment e\np', null],
    ['l 40; q 5', null],
  ])('%j is fine', (script, expected) => {
    expect(checkSedScript(script)).toBe(expected);
  });

  it.each([
    ['e', /e command/],
    ['1e id', /e command/],
    ['s/a/b/e', /s\/\/\/e/],
    ['s/a/b/ge', /s\/\/\/e/],
    ['s/[/]/x/e', /s\/\/\/e/],
    ['s/a/b/w out', /s\/\/\/w/],
    ['w out', /w command/],
    ['/x/W out', /W command/],
    ['r /etc/passwd', /r command/],
    ['1R f', /R command/],
    ['p;e id', /e command/],
    ['{p};e', /e command/],
    ['a foo\\\ntext\ne id', /e command/],
    ['s/a/b', /not understood/],
    ['k', /not understood/],
    ['s[a[b[', /not understood/],
  ])('%j escalates', (script, reason) => {
    expect(checkSedScript(script)?.reason).toMatch(reason);
  });

  it('marks shell-running forms as network and file forms as not', () => {
    expect(checkSedScript('1e id')?.network).toBe(true);
    expect(checkSedScript('w out')?.network).toBe(false);
  });
});

describe('checkAwkProgram', () => {
  it.each([
    '{ print $1 }',
    'NR > 1 && $2 != "x" || /y/',
    '{ print > "out.txt" }',
    'BEGIN { getline line < "f"; print line }',
  ])('%j is fine', (program) => {
    expect(checkAwkProgram(program)).toBeNull();
  });

  it.each([
    ['BEGIN { system("id") }', /system/],
    ['{ print | "sh" }', /pipe/],
    ['BEGIN { "id" | getline }', /pipe/],
    ['BEGIN { print |& "cmd" }', /pipe/],
    ['BEGIN { a ||| b }', /pipe/],
    ['@load "x"', /@/],
    ['BEGIN { f = "sys" "tem"; @f("id") }', /system|@/],
    ['BEGIN { print "x" > "/inet/tcp/0/h/80" }', /inet/],
  ])('%j escalates', (program, reason) => {
    expect(checkAwkProgram(program)).toMatch(reason);
  });
});

describe('the allowlist', () => {
  it('never lists a network tool as local', () => {
    const rules = createDefaultCommandRules();
    for (const name of networkCommandNames()) {
      expect(rules.get(name), name).toMatchObject({ kind: 'escalate', network: true });
    }
  });

  it('escalates the wrappers and interpreters of LESSONS.md', () => {
    const rules = createDefaultCommandRules();
    for (const name of [
      'xargs',
      'eval',
      'exec',
      'source',
      '.',
      'bash',
      'sh',
      'python3',
      'perl',
      'less',
      'git',
      'time',
      'nohup',
      'timeout',
    ]) {
      expect(rules.get(name)?.kind, name).toBe('escalate');
    }
  });
});
