/**
 * Bash evaluates arithmetic recursively: a variable whose value is `a[$(cmd)]` runs `cmd` when it is
 * read in `$((…))`, `((…))`, `for ((…))`, `$[…]`, an array subscript or a substring offset. So arithmetic
 * runs locally only when it is made of literal numbers and operators.
 */
import type { SyntaxNode } from './syntax-tree.ts';
import { report, textOf } from './walk-context.ts';
import type { WalkContext } from './walk-context.ts';
import { quote } from './verdict.ts';

const NUMBER_RE = /^(?:0[xX][0-9A-Fa-f]+|[0-9]+(?:#[0-9A-Za-z@_]+)?)$/;
const OPERATOR_NODES = new Set([
  'binary_expression',
  'unary_expression',
  'parenthesized_expression',
  'ternary_expression',
]);

/** `$#`, `$?`, `$$` and `$!` always hold a number (or nothing), so evaluating them runs no code. */
export const NUMERIC_SPECIALS = new Set(['$#', '$?', '$$', '$!']);

export function isNumericLiteral(text: string): boolean {
  return NUMBER_RE.test(text);
}

export function arithmeticReason(what: string): string {
  return `arithmetic on ${what} evaluates it as code`;
}

/** Checks every node below `node` (exclusive); reports once for the first offending part. */
export function checkArithmetic(ctx: WalkContext, node: SyntaxNode): void {
  const offending = findNonLiteral(ctx, node);
  if (offending !== null) report(ctx, arithmeticReason(quote(offending)), true);
}

function findNonLiteral(ctx: WalkContext, node: SyntaxNode): string | null {
  for (const child of node.children) {
    if (!child.named) continue;
    if (child.type === 'number') {
      if (child.children.length > 0 || !isNumericLiteral(textOf(ctx, child))) return textOf(ctx, child);
      continue;
    }
    if (child.type === 'comment') continue;
    if (child.type === 'simple_expansion' && NUMERIC_SPECIALS.has(textOf(ctx, child))) continue;
    if (!OPERATOR_NODES.has(child.type)) return textOf(ctx, child);
    const inner = findNonLiteral(ctx, child);
    if (inner !== null) return inner;
  }
  return null;
}
