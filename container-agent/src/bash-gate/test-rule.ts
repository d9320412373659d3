/**
 * `test`, `[ … ]` and `[[ … ]]`. Bash's test evaluates the name given to `-v`/`-R` as a possibly
 * subscripted variable, so `[ -v 'a[$(cmd)]' ]` runs `cmd`; `[[ … ]]` also evaluates both sides of
 * `-eq`, `-lt`, … as arithmetic. `[ … ]` picks operators by position, so a computed word there could
 * become `-v`: computed words are allowed only where they cannot land in an operator position.
 * Inside `[ … ]`, `<` and `>` are redirections, not comparisons.
 */
import type { ArgCheck } from './arg-check.ts';
import { arithmeticReason, isNumericLiteral, NUMERIC_SPECIALS } from './arithmetic.ts';
import { IDENTIFIER_RE } from './shell-variables.ts';
import type { SyntaxNode } from './syntax-tree.ts';
import { quote } from './verdict.ts';
import type { Finding } from './verdict.ts';
import { report, textOf } from './walk-context.ts';
import type { WalkContext } from './walk-context.ts';
import { analyzeWord } from './word-analysis.ts';
import type { WordInfo } from './rule-types.ts';

const NAME_OPERATORS = new Set(['-v', '-R']);
const ARITHMETIC_OPERATORS = new Set(['-eq', '-ne', '-lt', '-le', '-gt', '-ge']);
/** Binary operators of the test builtin that only compare (the builtin does not evaluate arithmetic). */
const COMPARING_OPERATORS = new Set([
  '=',
  '==',
  '!=',
  '<',
  '>',
  '-ef',
  '-nt',
  '-ot',
  ...ARITHMETIC_OPERATORS,
]);

function nameOperandFinding(operator: string, operand: WordInfo | undefined): Finding | null {
  if (operand !== undefined && operand.value !== null && IDENTIFIER_RE.test(operand.value)) return null;
  const shown = operand === undefined ? 'nothing' : quote(operand.text);
  return { reason: `test ${operator} ${shown} evaluates a subscripted name as code`, network: true };
}

/** Bash's test picks operators by argument count and position (test.c); mirror the cases we allow. */
function computedOnlyInOperandPositions(args: readonly WordInfo[]): boolean {
  const fixed = (i: number): string | null => args[i]?.value ?? null;
  switch (args.length) {
    case 0:
    case 1:
      return true;
    case 2:
      return fixed(0) !== null;
    case 3: {
      const middle = fixed(1);
      if (middle !== null && COMPARING_OPERATORS.has(middle)) return true;
      return fixed(0) === '!' && middle !== null;
    }
    case 4:
      return fixed(0) === '!' && computedOnlyInOperandPositions(args.slice(1));
    default:
      return false;
  }
}

export function testArgsFinding(args: readonly WordInfo[]): Finding | null {
  for (let i = 0; i < args.length; i++) {
    const op = args[i]?.value;
    if (op !== null && op !== undefined && NAME_OPERATORS.has(op)) {
      const found = nameOperandFinding(op, args[i + 1]);
      if (found !== null) return found;
    }
  }
  if (args.every((a) => a.value !== null)) return null;
  const split = args.find((a) => a.splits);
  if (split !== undefined) {
    return {
      reason: `test operand ${quote(split.text)} is unquoted and could become an operator`,
      network: true,
    };
  }
  if (computedOnlyInOperandPositions(args)) return null;
  return { reason: 'test has computed words where bash could read them as operators', network: true };
}

/** The `test` command (the `[` form is parsed as a test_command and checked below). */
export const testBuiltinRule: ArgCheck = (_command, args) => {
  const last = args[args.length - 1];
  const operands = last?.value === ']' ? args.slice(0, -1) : args;
  return testArgsFinding(operands);
};

function fixedWord(node: SyntaxNode, text: string): WordInfo {
  return { node, text, value: text, prefix: text, splits: false };
}

/** `[ … ]` as tree-sitter nests it, back into the flat argument list bash's test sees. */
function flattenSingleBracket(ctx: WalkContext, node: SyntaxNode, out: WordInfo[]): void {
  for (const child of node.children) {
    const text = textOf(ctx, child);
    if (!child.named || child.type === 'test_operator') {
      if (text === '<' || text === '>') {
        report(ctx, `${quote(text)} inside [ ] is a redirection, not a comparison`, true);
      }
      out.push(fixedWord(child, text));
      continue;
    }
    if (
      child.type === 'binary_expression' ||
      child.type === 'unary_expression' ||
      child.type === 'parenthesized_expression'
    ) {
      flattenSingleBracket(ctx, child, out);
      continue;
    }
    out.push(analyzeWord(ctx, child));
  }
}

function isNumericOperand(ctx: WalkContext, node: SyntaxNode): boolean {
  if (node.type === 'simple_expansion') return NUMERIC_SPECIALS.has(textOf(ctx, node));
  const info = analyzeWord(ctx, node, true);
  return info.value !== null && (/^[+-]?[0-9]+$/.test(info.value) || isNumericLiteral(info.value));
}

function checkDoubleBracket(ctx: WalkContext, node: SyntaxNode): void {
  if (!node.named) return;
  if (node.type === 'binary_expression' || node.type === 'unary_expression') {
    const operator = node.children.find((c) => c.field === 'operator');
    const op = operator === undefined ? '' : textOf(ctx, operator);
    const operands = node.children.filter((c) => c.named && c.field !== 'operator');
    if (ARITHMETIC_OPERATORS.has(op)) {
      for (const operand of operands) {
        if (!isNumericOperand(ctx, operand)) {
          report(ctx, `[[ ${op} ]] operand ${quote(textOf(ctx, operand))}: ${arithmeticReason('it')}`, true);
        }
      }
      return;
    }
    if (NAME_OPERATORS.has(op)) {
      const operand = operands[0];
      const found = nameOperandFinding(
        op,
        operand === undefined ? undefined : analyzeWord(ctx, operand, true),
      );
      if (found !== null) report(ctx, found.reason, found.network);
      return;
    }
    for (const operand of operands) checkDoubleBracket(ctx, operand);
    return;
  }
  if (node.type === 'parenthesized_expression') {
    for (const child of node.children) checkDoubleBracket(ctx, child);
    return;
  }
  if (node.type === 'test_operator') return;
  // In [[ ]] words do not split, so only what they run or evaluate matters.
  analyzeWord(ctx, node, true);
}

export function checkTestCommand(ctx: WalkContext, node: SyntaxNode): void {
  const opener = node.children[0];
  if (opener !== undefined && opener.type === '[[') {
    for (const child of node.children) checkDoubleBracket(ctx, child);
    return;
  }
  const args: WordInfo[] = [];
  flattenSingleBracket(ctx, node, args);
  // Drop the brackets themselves.
  const inner = args.filter(
    (a, i) => !((i === 0 && a.value === '[') || (i === args.length - 1 && a.value === ']')),
  );
  const found = testArgsFinding(inner);
  if (found !== null) report(ctx, found.reason, found.network);
}
