/**
 * What one shell word is worth to the rules: its value when it is fixed in the source, or the fact that
 * it is computed at run time (and whether it may split into several words or none). Analysing a word
 * also classifies everything it runs: command and process substitutions are walked as statements, and
 * expansions that make bash evaluate code (`${!x}`, `${x@P}`, subscripts, substring offsets) are
 * reported.
 */
import { arithmeticReason, checkArithmetic, isNumericLiteral } from './arithmetic.ts';
import { isProtectedVariable, protectedVariableReason } from './shell-variables.ts';
import type { WordInfo } from './rule-types.ts';
import type { SyntaxNode } from './syntax-tree.ts';
import { quote } from './verdict.ts';
import { report, textOf } from './walk-context.ts';
import type { WalkContext } from './walk-context.ts';

export type { WordInfo } from './rule-types.ts';

export const UNPARSED_EXPANSION_REASON = 'contains an expansion the parser did not understand';

/** `${x@Q}` and friends only reformat the value; `@P` expands it as a prompt, running `$(…)` inside. */
const SAFE_TRANSFORMS = new Set(['Q', 'E', 'U', 'u', 'L', 'a', 'A', 'K', 'k']);

interface Decoded {
  value: string;
  dynamic: boolean;
  splits: boolean;
  /** Length of `value` that is fixed before the first dynamic part. */
  fixed: number;
  /** Starts with `~` or `~user`: a home directory, an absolute path from the trusted environment. */
  home?: boolean;
}

/**
 * `~` and `~/…` expand to the agent's HOME, which cannot be assigned locally (see shell-variables.ts),
 * so such a word is an absolute path that starts with neither `-` nor `/dev/tcp`. Its prefix is
 * reported as `~` to say exactly that. `~user` is that user's home from /etc/passwd (on Debian `~sys` is
 * /dev) and `~+` is $PWD: neither is trusted.
 */
const HOME_PREFIX_RE = /^~(?:\/|$)/;
export const HOME_PREFIX = '~';
/** `$HOME` (also in braces): the same absolute directory. `$PWD` is wherever an earlier `cd` went. */
const TRUSTED_DIRECTORY_RE = /^\$(?:HOME|\{HOME\})$/;

function isExpansionStart(next: string | undefined): boolean {
  return next !== undefined && /[A-Za-z0-9_{([@*#?!$-]/.test(next);
}

/** Unquoted word text: backslashes quote the next character, globs/braces/tilde are computed. */
export function decodeUnquoted(ctx: WalkContext, text: string): Decoded {
  let value = '';
  let dynamic = false;
  let splits = false;
  let fixed = -1;
  let home = false;
  const markDynamic = (split: boolean): void => {
    if (!dynamic) fixed = value.length;
    dynamic = true;
    if (split) splits = true;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\') {
      const next = text[i + 1];
      if (next === undefined) {
        value += c;
      } else {
        if (next !== '\n') value += next;
        i++;
      }
      continue;
    }
    if (c === '*' || c === '?' || c === '[' || c === '{') {
      markDynamic(true);
    } else if (c === '~' && i === 0) {
      markDynamic(false);
      home = HOME_PREFIX_RE.test(text);
    } else if (c === '`' || (c === '$' && isExpansionStart(text[i + 1]))) {
      report(ctx, `${quote(text)} ${UNPARSED_EXPANSION_REASON}`, true);
      markDynamic(true);
    } else if (c === "'" || c === '"' || c === '(' || c === ')') {
      markDynamic(true);
    } else if (c === '\n') {
      // An unquoted newline always ends a word in bash; inside one, the parser has misread the input.
      report(ctx, `${quote(text)} holds a newline bash would end the command at`, true);
      markDynamic(true);
    }
    value += c;
  }
  return { value, dynamic, splits, fixed: dynamic ? fixed : value.length, home };
}

/** Text between double quotes (or of an unquoted here-doc): only `$ \` " \\ newline` can be escaped. */
export function decodeDoubleQuoted(ctx: WalkContext, text: string, shown: string): Decoded {
  let value = '';
  let dynamic = false;
  let fixed = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\') {
      const next = text[i + 1];
      if (next === '$' || next === '`' || next === '"' || next === '\\') {
        value += next;
        i++;
        continue;
      }
      if (next === '\n') {
        i++;
        continue;
      }
      value += c;
      continue;
    }
    if (c === '`' || (c === '$' && isExpansionStart(text[i + 1]))) {
      report(ctx, `${quote(shown)} ${UNPARSED_EXPANSION_REASON}`, true);
      if (!dynamic) fixed = value.length;
      dynamic = true;
    }
    value += c;
  }
  return { value, dynamic, splits: false, fixed: dynamic ? fixed : value.length };
}

function fromDecoded(node: SyntaxNode, text: string, d: Decoded): WordInfo {
  return {
    node,
    text,
    value: d.dynamic ? null : d.value,
    prefix: d.home ? HOME_PREFIX : d.value.slice(0, d.fixed),
    splits: d.splits,
  };
}

function computed(node: SyntaxNode, text: string, splits: boolean, prefix = ''): WordInfo {
  return { node, text, value: null, prefix, splits };
}

/**
 * Analyses one word-like node. `quoted` is true inside double quotes, where expansions do not split.
 */
export function analyzeWord(ctx: WalkContext, node: SyntaxNode, quoted = false): WordInfo {
  const text = textOf(ctx, node);
  if (!node.named) {
    // `$"…"` reaches us as a `$` token followed by a string: a translated, hence computed, word.
    if (text === '$') return computed(node, text, false);
    return fromDecoded(node, text, decodeUnquoted(ctx, text));
  }
  switch (node.type) {
    case 'word':
      return fromDecoded(node, text, decodeUnquoted(ctx, text));
    case 'number':
    case 'concatenation':
      if (node.children.length === 0) return fromDecoded(node, text, decodeUnquoted(ctx, text));
      return analyzeParts(ctx, node, text, quoted);
    case 'raw_string':
      return { node, text, value: text.slice(1, -1), prefix: text.slice(1, -1), splits: false };
    case 'ansi_c_string': {
      const inner = text.slice(2, -1);
      const escape = inner.indexOf('\\');
      // Escapes such as \x2d could spell an option; treat any escaped content as computed.
      if (escape === -1) return { node, text, value: inner, prefix: inner, splits: false };
      return computed(node, text, false, inner.slice(0, escape));
    }
    case 'string':
      return analyzeString(ctx, node, text);
    case 'translated_string':
      for (const child of node.children) if (child.named) analyzeWord(ctx, child, true);
      return computed(node, text, false);
    case 'simple_expansion':
      return computed(node, text, !quoted, TRUSTED_DIRECTORY_RE.test(text) ? HOME_PREFIX : '');
    case 'expansion':
      checkExpansion(ctx, node);
      return computed(node, text, !quoted, TRUSTED_DIRECTORY_RE.test(text) ? HOME_PREFIX : '');
    case 'command_substitution':
      walkSubstitution(ctx, node);
      return computed(node, text, !quoted);
    case 'process_substitution':
      walkSubstitution(ctx, node);
      return computed(node, text, false, '/dev/fd/');
    case 'arithmetic_expansion':
      checkArithmetic(ctx, node);
      return computed(node, text, !quoted);
    case 'brace_expression':
    case 'extglob_pattern':
      return computed(node, text, true);
    case 'regex':
    case 'string_content':
    case 'heredoc_content':
      return fromDecoded(node, text, decodeDoubleQuoted(ctx, text, text));
    case 'variable_name':
    case 'special_variable_name':
    case 'test_operator':
      return { node, text, value: text, prefix: text, splits: false };
    default:
      report(ctx, `unsupported construct ${node.type} in ${quote(text)}`, true);
      return computed(node, text, true);
  }
}

function analyzeParts(ctx: WalkContext, node: SyntaxNode, text: string, quoted: boolean): WordInfo {
  let value = '';
  let dynamic = false;
  let splits = false;
  let prefix = '';
  for (const child of node.children) {
    const part = analyzeWord(ctx, child, quoted);
    if (part.splits) splits = true;
    if (dynamic) continue;
    if (part.value === null) {
      dynamic = true;
      prefix = value + part.prefix;
    } else {
      value += part.value;
    }
  }
  return { node, text, value: dynamic ? null : value, prefix: dynamic ? prefix : value, splits };
}

/**
 * Scans the text of a string or here-doc body that no expansion node covers. tree-sitter leaves some
 * of it outside every child (and does not parse backticks in here-docs at all), so the uncovered text
 * is where an expansion the parser missed would hide.
 */
export function scanUncovered(
  ctx: WalkContext,
  node: SyntaxNode,
  from: number,
  to: number,
  shown: string,
): Decoded {
  let text = '';
  let pos = from;
  for (const child of node.children) {
    if (!child.named || child.type === 'string_content' || child.type === 'heredoc_content') continue;
    if (child.start > pos) text += ctx.source.slice(pos, child.start);
    // A placeholder keeps the text on either side from reading as one escape or expansion.
    text += ' ';
    pos = Math.max(pos, child.end);
  }
  if (to > pos) text += ctx.source.slice(pos, to);
  return decodeDoubleQuoted(ctx, text, shown);
}

function analyzeString(ctx: WalkContext, node: SyntaxNode, text: string): WordInfo {
  let firstDynamic: { node: SyntaxNode; info: WordInfo } | null = null;
  for (const child of node.children) {
    if (!child.named || child.type === 'string_content') continue;
    const info = analyzeWord(ctx, child, true);
    firstDynamic ??= { node: child, info };
  }
  const whole = scanUncovered(ctx, node, node.start + 1, node.end - 1, text);
  if (firstDynamic === null) return fromDecoded(node, text, whole);
  const before = decodeDoubleQuoted(ctx, ctx.source.slice(node.start + 1, firstDynamic.node.start), text);
  if (before.dynamic) return computed(node, text, false, before.value.slice(0, before.fixed));
  return computed(node, text, false, before.value + firstDynamic.info.prefix);
}

/** `$(…)`, backticks and `<(…)`/`>(…)`: their statements, and `$(<file)`'s redirect. */
function walkSubstitution(ctx: WalkContext, node: SyntaxNode): void {
  for (const child of node.children) {
    if (child.named) ctx.walkStatement(child);
  }
}

function checkSubscriptIndex(ctx: WalkContext, subscript: SyntaxNode): void {
  for (const child of subscript.children) {
    if (child.field !== 'index') continue;
    const index = textOf(ctx, child);
    if (index === '@' || index === '*') continue;
    if (child.type === 'number' && child.children.length === 0 && isNumericLiteral(index)) continue;
    report(ctx, `array subscript ${quote(index)}: ${arithmeticReason('a subscript')}`, true);
  }
}

export function checkExpansion(ctx: WalkContext, node: SyntaxNode): void {
  const text = textOf(ctx, node);
  const parts = node.children.filter((c) => !(c.type === '${' || c.type === '}') || c.named);
  let lastOperator = '';
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as SyntaxNode;
    if (!part.named) {
      const op = part.type;
      if (i === 0 && op === '!') {
        report(ctx, `indirect expansion ${quote(text)} can evaluate code`, true);
        return;
      }
      if (lastOperator === '@') {
        if (!SAFE_TRANSFORMS.has(op))
          report(ctx, `expansion ${quote(text)} evaluates the value as code`, true);
        lastOperator = `@${op}`;
        continue;
      }
      lastOperator = op;
      continue;
    }
    if (part.type === 'subscript') {
      checkSubscriptIndex(ctx, part);
      continue;
    }
    if ((part.type === 'variable_name' || part.type === 'special_variable_name') && lastOperator !== ':') {
      continue;
    }
    if (lastOperator === ':') {
      // Substring offset and length are arithmetic.
      const offset = textOf(ctx, part);
      if (!(part.type === 'number' && part.children.length === 0 && /^-?[0-9]+$/.test(offset))) {
        report(ctx, `substring offset ${quote(offset)}: ${arithmeticReason('it')}`, true);
      }
      continue;
    }
    if (lastOperator === '@') {
      report(ctx, `expansion ${quote(text)} is not understood`, true);
      continue;
    }
    analyzeWord(ctx, part, true);
  }
  if (lastOperator === '@') report(ctx, `expansion ${quote(text)} is not understood`, true);
  // `${x:=v}` assigns; check the name that precedes the operator.
  const name = parts.find(
    (p) => p.named && (p.type === 'variable_name' || p.type === 'special_variable_name'),
  );
  const assigns = parts.some((p) => !p.named && (p.type === ':=' || p.type === '='));
  if (name && assigns && isProtectedVariable(textOf(ctx, name)))
    report(ctx, protectedVariableReason(textOf(ctx, name)), true);
}
