import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  createBashClassifier,
  createBashClassifierWithParser,
  createDefaultCommandRules,
  loadBashParser,
} from '../../../container-agent/src/bash-gate/index.ts';
import type { BashClassifier, GateVerdict } from '../../../container-agent/src/bash-gate/index.ts';
import { resolveBashGateWasmPaths } from '../../../container-agent/src/bash-gate/wasm-files.ts';

let gate: BashClassifier;

beforeAll(async () => {
  gate = await createBashClassifier(resolveBashGateWasmPaths());
});

function expectLocal(command: string): void {
  const verdict = gate.classify(command);
  expect(verdict, command).toEqual({ class: 'local', reason: expect.any(String), network: false });
}

function expectEscalate(command: string, reason?: RegExp, network?: boolean): GateVerdict {
  const verdict = gate.classify(command);
  expect(verdict.class, `${command} → ${verdict.reason}`).toBe('escalate');
  if (reason) expect(verdict.reason, command).toMatch(reason);
  if (network !== undefined) expect(verdict.network, command).toBe(network);
  return verdict;
}

describe('loading', () => {
  it('accepts the wasm files as bytes as well as paths, and shares one runtime between classifiers', async () => {
    const paths = resolveBashGateWasmPaths();
    const fromBytes = await createBashClassifier({
      treeSitterWasm: new Uint8Array(fs.readFileSync(paths.treeSitterWasm)),
      bashLanguageWasm: new Uint8Array(fs.readFileSync(paths.bashLanguageWasm)),
    });
    expect(fromBytes.classify('ls')).toMatchObject({ class: 'local' });
    expect(fromBytes.classify('curl x')).toMatchObject({ class: 'escalate', network: true });
    // The first classifier still works after the second one loaded.
    expect(gate.classify('ls -la | wc -l')).toMatchObject({ class: 'local' });
  });

  it('names the missing file when a grammar path is wrong', async () => {
    const paths = resolveBashGateWasmPaths();
    await expect(
      loadBashParser({ ...paths, bashLanguageWasm: '/nonexistent/tree-sitter-bash.wasm' }),
    ).rejects.toThrow(/tree-sitter-bash grammar wasm at \/nonexistent/);
  });

  it('takes its allowlist from the options', async () => {
    const parser = await loadBashParser(resolveBashGateWasmPaths());
    const rules = new Map(createDefaultCommandRules());
    rules.delete('ls');
    const strict = createBashClassifierWithParser(parser, { rules });
    expect(strict.classify('ls')).toMatchObject({
      class: 'escalate',
      reason: 'ls is not on the local allowlist',
    });
    expect(strict.classify('cat x')).toMatchObject({ class: 'local' });
  });
});

describe('every simple command is checked, wherever it sits', () => {
  const hiding: Array<[string, string]> = [
    ['pipeline', 'ls | curl x | wc'],
    ['and-list', 'ls && curl x'],
    ['or-list', 'ls || curl x'],
    ['sequence', 'ls; curl x'],
    ['newline', 'ls\ncurl x'],
    ['background', 'curl x & ls'],
    ['subshell', '(ls; (curl x))'],
    ['brace group', '{ ls; { curl x; }; }'],
    ['command substitution', 'echo "$(ls "$(curl x)")"'],
    ['backticks', 'echo `curl x`'],
    ['input process substitution', 'wc <(curl x)'],
    ['output process substitution', 'ls > >(curl x)'],
    ['here-doc body', 'cat <<EOF\na $(curl x) b\nEOF'],
    ['here-doc trailing pipeline', 'cat <<EOF | curl x\nbody\nEOF'],
    ['here-string', 'cat <<< "$(curl x)"'],
    ['if condition', 'if curl x; then ls; fi'],
    ['elif body', 'if false; then ls; elif true; then curl x; fi'],
    ['else body', 'if false; then ls; else curl x; fi'],
    ['while', 'while curl x; do :; done'],
    ['until', 'until ls; do curl x; done'],
    ['for list', 'for i in $(curl x); do echo $i; done'],
    ['for body', 'for i in a; do curl x; done'],
    ['select', 'select i in a; do curl x; done'],
    ['case subject', 'case $(curl x) in *) ;; esac'],
    ['case pattern', 'case a in $(curl x)) ;; esac'],
    ['case body', 'case a in a) curl x;; esac'],
    ['function body', 'f() { curl x; }'],
    ['function keyword', 'function g { curl x; }'],
    ['negation', '! curl x'],
    ['assignment value', 'v=$(curl x)'],
    ['prefix assignment', 'V=$(curl x) ls'],
    ['declaration', 'local v=$(curl x)'],
    ['array element', 'a=(1 $(curl x))'],
    ['redirect target', 'ls > "$(curl x)"'],
    ['expansion default', 'echo ${v:-$(curl x)}'],
    ['expansion pattern', 'echo ${v/$(curl x)/y}'],
    ['test', '[ -n "$(curl x)" ]'],
    ['double bracket', '[[ $(curl x) == a ]]'],
    ['nested three deep', 'echo $(echo $(echo $(curl x)))'],
  ];
  it.each(hiding)('%s', (_where, command) => {
    expectEscalate(command, /curl reaches the network/, true);
  });

  it('allows the same constructs when everything in them is local', () => {
    for (const command of [
      'ls | grep a | wc -l',
      'ls && echo ok || echo no; pwd',
      '(cd src; ls) && { echo a; echo b; } > out.txt',
      'echo "$(ls "$(pwd)")" `date`',
      'diff <(ls a) <(ls b) > >(wc -l)',
      'cat <<EOF\nhello $(whoami) ${USER:-x}\nEOF',
      'if [ -f x ]; then cat x; elif [ -d x ]; then ls x; else echo none; fi',
      'while read -r l; do echo "$l"; done < f',
      'for f in *.txt; do wc -l "$f"; done',
      'case "$v" in a|b) echo ab;; *) echo other;; esac',
      'f() { ls "$@"; }; f -la',
      'v=$(date) w="${v%% *}"; echo "$w"',
      'arr=(a b "$(pwd)"); echo "${arr[@]}"',
    ]) {
      expectLocal(command);
    }
  });
});

describe('command names', () => {
  it.each([
    ['$cmd x', /not a literal word/],
    ['${c}url x', /not a literal word/],
    ['"ls"', /not a literal word/],
    ["'ba''sh' -c id", /not a literal word/],
    ['\\ls', /not a literal word/],
    ['$(echo ls)', /not a literal word/],
    ['/bin/ls', /runs a program by path/],
    ['./script.sh', /runs a program by path/],
    ['../bin/tool', /runs a program by path/],
    ['l? -la', /not a literal word/],
    ['unknowncmd', /unknowncmd is not on the local allowlist/],
  ])('%s escalates', (command, reason) => {
    expectEscalate(command, reason, true);
  });

  it('normalizes versioned interpreter names', () => {
    expectEscalate('python3.12 -c 1', /python3\.12 can run arbitrary code|can run arbitrary code/, true);
    expectEscalate('perl5.36 -e 1', /can run arbitrary code/, true);
  });

  it('treats wrappers as running another program', () => {
    for (const command of [
      'env ls',
      'command ls',
      'exec ls',
      'nohup ls',
      'timeout 1 ls',
      'xargs ls',
      'eval ls',
      'sudo ls',
      'time ls',
      'nice ls',
    ]) {
      expectEscalate(command, /runs another program/, true);
    }
    expectLocal('env');
    expectLocal('command -v ls');
  });

  it('treats calls of functions defined earlier at top level as local, others not', () => {
    expectLocal('f() { ls; }; f');
    expectEscalate('f; f() { ls; }', /f is not on the local allowlist/);
    expectEscalate('(f() { ls; }); f', /f is not on the local allowlist/);
    expectEscalate('true && f() { ls; }; f', /f is not on the local allowlist/);
    expectEscalate('f() { ls; }; unset -f f; f', /f is not on the local allowlist/);
    expectEscalate('cat() { ls; }; cat', /shadows/);
    expectEscalate(':(){ :|:& };:', /function name/);
  });
});

describe('arguments that run programs', () => {
  it.each([
    ["find . -exec sh -c 'id' \\;", /find -exec/],
    ['find . -name x -execdir id \\;', /find -execdir/],
    ['find . -okdir id \\;', /find -okdir/],
    ['find . -newerXY x', /not on the local allowlist/],
    ['find . -name $pat', /computed at run time/],
    ['awk \'BEGIN { system("id") }\'', /system/],
    ['awk \'BEGIN { print | "cat" }\'', /pipe/],
    ["awk -e 'BEGIN{}' -f x.awk", /-f/],
    ["awk --load=x 'BEGIN{}'", /--load/],
    // Only gawk is trusted to honour --sandbox; mawk (Debian's awk) does not know it.
    ['awk --sandbox \'BEGIN { system("id") }\'', /system/],
    ["sed -n '1e id' f", /sed e command/],
    ["sed 's/a/b/e' f", /s\/\/\/e/],
    ["sed 's/a/b/w out' f", /s\/\/\/w/],
    ["sed '/x/r other' f", /sed r command/],
    ["sed 'k' f", /not understood/],
    ["sed 's/a/b' f", /not understood/],
    ['tar -cf a.tar --checkpoint-action=exec=id x', /checkpoint-action/],
    ['tar -xf host:archive.tar', /remote host/],
    ['tar -cf a.tar --bogus x', /--bogus is not on the local allowlist/],
    ['sort --compress-program=id f', /compress-program/],
    ['rg --pre id pattern', /--pre/],
    ['rg -iz pattern', /-z/],
    ['split --filter=id f', /--filter/],
  ])('%s escalates', (command, reason) => {
    expectEscalate(command, reason);
  });

  it.each([
    "find . -name '*.ts' -type f -print",
    'find . -name -exec',
    'find . \\( -name a -o -name b \\) -prune -o -print',
    'find "$dir" -maxdepth 2 -newermt 2024-01-01',
    'awk -F: \'{ print $1 > "users.txt" }\' /etc/passwd',
    "awk 'a || b' f",
    'gawk --sandbox \'BEGIN { system("id") }\'',
    "sed -n '/start/,/end/{/x/!p}' f",
    "sed 's/e/E/g; y/abc/xyz/' f",
    "sed -e 's|/|\\\\|g' f",
    "sed '$!N; s/\\n/ /' f",
    "sed '1~2d; 0,/x/s//y/' f",
    'sed --sandbox -e "$script" f',
    'tar xzvf a.tgz -C out',
    'tar -c -f - --exclude=.git .',
    'sort -k2,2n -t: f',
    'rg -e pattern -g "*.ts" -- "$x"',
    'split -b 1M big.bin part.',
  ])('%s stays local', (command) => {
    expectLocal(command);
  });
});

describe('evaluation hidden in expansions and assignments', () => {
  it.each([
    ['echo $((n + 1))', /arithmetic/],
    ['(( n > 1 ))', /arithmetic/],
    ['for ((i = 0; i < 3; i++)); do :; done', /arithmetic/],
    ['echo ${a[i]}', /subscript/],
    ['echo ${a[$(id)]}', /subscript/],
    ['echo ${s:$off:2}', /parse error|substring/],
    ['echo ${s:o}', /substring|parse error/],
    ['echo ${!name}', /indirect/],
    ['echo ${v@P}', /evaluates the value/],
    ['a[$i]=x', /subscript/],
    ['declare -i n=5', /-i/],
    ['typeset -n r=v', /-n/],
    ['local -t x', /-t/],
    ['export -f f', /-f/],
    ['[[ $a -eq $b ]]', /arithmetic/],
    ['[[ -v a[$i] ]]', /subscripted name/],
    ['test -v "$v"', /subscripted name/],
    ['[ $a = b ]', /unquoted/],
    ['[ -n "$op" -a x ]', /operators/],
    ['printf -v "$n" x', /assigns/],
    ['printf -v PATH /tmp', /PATH/],
    ['read -a "$n"', /computed/],
    ['read IFS', /IFS/],
    ['unset "a[$i]"', /not a plain name/],
    ['PATH=/tmp ls', /PATH/],
    ['export BASH_ENV=x', /BASH_ENV/],
    ['for PATH in /tmp; do ls; done', /PATH/],
    ['echo ${PATH:=/tmp}', /PATH/],
    ['ls {PATH}>/dev/null', /descriptor/],
  ])('%s escalates', (command, reason) => {
    expectEscalate(command, reason, true);
  });

  it.each([
    'echo $((1 + 2 * 3)) $[4] $((0x10 + 8#7))',
    'echo $(( $# + 1 ))',
    'echo ${a[0]} ${a[@]} ${#a[*]} ${s:1:2} ${s: -1} ${v@Q} ${v^^}',
    '[[ $# -gt 0 && -n $x ]]',
    '[[ 3 -lt 4 ]]',
    '[ "$a" = "$b" ]',
    '[ -n "$a" ]',
    '[ ! -e "$f" ]',
    'test -v HOME',
    'printf -v out %s x',
    'read -r -a parts <<< "a b"',
    'unset -v tmp other',
    'declare -a list=(1 2) && local_x=1',
    'export A=1 B="two words"',
    'set -eu; set -o pipefail; set -- a b',
    'shopt -s globstar nullglob',
  ])('%s stays local', (command) => {
    expectLocal(command);
  });
});

describe('redirections', () => {
  it('allows files, descriptors and home targets', () => {
    for (const command of [
      'ls > out.txt 2> err.txt',
      'ls >> log 2>&1',
      'ls &> all.log',
      'cat < in.txt > out.txt',
      'ls 2>&-',
      'echo x > ~/notes/a.txt',
      'echo x > "$HOME/a.txt"',
      'echo $(< file.txt)',
    ]) {
      expectLocal(command);
    }
  });

  it('escalates writes to a target a variable could point anywhere, an extra mount included', () => {
    // `name=../../extra/notes/todo` would make both of these truncate the owner's file.
    expectEscalate('echo x > "out/$name.txt"', /may overwrite a file on an extra mount/, false);
    expectEscalate('echo x > /tmp/"$name"', /may overwrite a file on an extra mount/, false);
  });

  it('escalates targets that could be a socket', () => {
    expectEscalate('echo x > "$target"', /computed at run time/, true);
    expectEscalate('echo x > /dev/"$kind"/h/1', /computed at run time/, true);
    expectEscalate('echo x > /d$x', /computed at run time/, true);
    expectEscalate('echo x >& /dev/tcp/h/80', /reaches the network/, true);
  });

  it('reads the words tree-sitter puts after a redirection as arguments', () => {
    expectEscalate('find . 2>/dev/null -exec id \\;', /find -exec/);
    expectEscalate("sed >out 's/a/b/e' f", /s\/\/\/e/);
  });
});

describe('here-docs', () => {
  it('checks unquoted bodies, including backticks the parser leaves as text', () => {
    expectEscalate('cat <<EOF\n`curl x`\nEOF', /did not understand/, true);
    expectEscalate('cat <<EOF\nok $(date) then `id`\nEOF', /did not understand/, true);
    // tree-sitter does not parse <<- bodies; the text scan still finds the substitution.
    expectEscalate('cat <<-EOF\n\t$(curl x)\nEOF', /curl|did not understand/, true);
  });

  it('leaves quoted bodies alone', () => {
    expectLocal("cat <<'EOF'\n$(curl x) `id`\nEOF");
    expectLocal('cat <<"EOF"\n$(curl x)\nEOF');
    expectLocal('cat <<\\EOF\n`curl x`\nEOF');
    expectLocal('cat <<EOF\nprice: \\$5 and \\`quoted\\`\nEOF');
  });
});

describe('fails closed', () => {
  it('on parse errors and incomplete input', () => {
    for (const command of [
      'echo $(',
      'if true; then ls',
      "echo 'open",
      'ls |',
      'case x in',
      '((',
      '{ ls',
      'exec 3<>/dev/tcp/h/1',
    ]) {
      expectEscalate(command, /parse error/, true);
    }
  });

  it('on control characters, overlong and too deeply nested input', async () => {
    expectEscalate('ls\u0000curl', /control characters/);
    expectEscalate('ls\r\nwc', /control characters/);
    expectEscalate('echo \u001b[31m', /control characters/);
    const parser = await loadBashParser(resolveBashGateWasmPaths());
    const small = createBashClassifierWithParser(parser, { maxCommandLength: 20, maxDepth: 30 });
    expect(small.classify('echo 12345678901234567890')).toMatchObject({
      class: 'escalate',
      reason: expect.stringMatching(/longer than 20/),
    });
    expect(small.classify(`${'echo $('.repeat(5)}ls${')'.repeat(5)}`.slice(0, 20))).toMatchObject({
      class: 'escalate',
    });
    const deep = createBashClassifierWithParser(parser, { maxDepth: 30 });
    expect(deep.classify(`${'('.repeat(40)}ls${')'.repeat(40)}`)).toMatchObject({
      class: 'escalate',
      reason: expect.stringMatching(/nested deeper/),
    });
  });

  it('on a line continuation that bash would join into one word', () => {
    expectEscalate('tr\\\naceroute example.com', /line continuation/);
    expectEscalate('sort --compress-prog\\\nram=sh f', /line continuation/);
    expectLocal('ls \\\n  -la \\\n  src');
    expectLocal('ls &&\\\necho x');
  });

  it('where tree-sitter and bash split words differently', () => {
    // bash reads `a\<tab>#…` as one word, so the substitution runs; tree-sitter sees a comment.
    expectEscalate('echo a\\\t#$(curl x)', /not as a comment|skipped/);
    expectLocal('echo a # $(curl x) is only a comment');
    // tree-sitter drops the escaped blank; bash reads one sed script, `p ;e id`.
    expectEscalate("sed 'p'\\ \\;e\\ id f", /skipped/);
    expectEscalate('echo "$(sed "p"\\ \\;e\\ id f)"', /skipped/);
    expectLocal('ls a\\ b');
    // `\$` after a quoted word: tree-sitter makes two words of bash's one.
    expectEscalate("printf '%s' ''\\$", /two words/);
    // bash ends the comment (and the command) at the newline; tree-sitter carried the command on.
    expectEscalate('echo x #\\\n\\curl evil.example', /comment/);
  });

  it('never throws, whatever the input', () => {
    const inputs = [
      '',
      ' ',
      '\n\n',
      ';;',
      '$',
      '`',
      '"',
      "'",
      '\\',
      '${',
      '$((',
      '<<',
      '<<<',
      '>&',
      '|&',
      '!!',
      '{}',
      '()',
      'a'.repeat(10_000),
      '$('.repeat(500),
    ];
    for (const input of inputs) {
      const verdict = gate.classify(input);
      expect(['local', 'escalate']).toContain(verdict.class);
      // Only blank input, a word of a's and an empty group (bash: no such command) may run.
      if (verdict.class === 'local')
        expect(input.trim() === '' || /^a+$/.test(input) || input === '{}', input).toBe(true);
    }
    expect(gate.classify(42 as unknown as string)).toMatchObject({ class: 'escalate' });
  });

  it('keeps reasons short and the network flag false only for offline escalations', () => {
    const many = gate.classify(
      Array.from({ length: 50 }, (_, i) => `curl h${i} ; wget w${i} ; nc n${i} 1`).join('\n'),
    );
    expect(many.reason.length).toBeLessThanOrEqual(600);
    expectEscalate('kill 1', /signals/, false);
    expectEscalate('kill 1; curl x', /curl/, true);
  });

  it('escalates every signal aimed at the agent, PID 1 or a computed target, however it is spelled', () => {
    for (const command of [
      'kill -USR1 $PPID',
      'kill -s STOP 1',
      'kill -9 -1',
      'kill -USR1 $(pgrep -f agent.cjs)',
      'p=$((PPID)); kill -SIGUSR1 "$p"',
      'pkill -USR1 node',
      'killall -STOP tini',
      'command kill -USR1 $PPID',
      'builtin kill -USR1 1',
      'k=kill; $k -USR1 1',
      'echo $PPID | xargs kill -USR1',
    ])
      expect(gate.classify(command), command).toMatchObject({ class: 'escalate' });
  });
});
