/**
 * State shared by one classification: the source, the rules, and the findings collected so far. One
 * context per `classify()` call; nothing outlives it.
 */
import type { CommandRuleTable } from './rule-types.ts';
import type { SyntaxNode } from './syntax-tree.ts';
import type { Finding } from './verdict.ts';
import type { WorkingDirectories } from './working-directory.ts';

export interface WalkContext {
  readonly source: string;
  readonly rules: CommandRuleTable;
  /**
   * Functions surely defined before a call: name → where the definition ends. Only top-level
   * definitions count (one inside a subshell, a branch or a loop may not exist when the call runs, and
   * the call would then start a program of that name), and never a name that is unset anywhere.
   */
  readonly functions: ReadonlyMap<string, number>;
  readonly findings: Finding[];
  /** Every directory the command could be in when any part of it runs; null when unknown. */
  readonly directories: WorkingDirectories;
  /** Classifies the statements inside a `$(…)`, backticks, `<(…)` or a here-doc's trailing pipeline. */
  walkStatement(node: SyntaxNode): void;
}

export function textOf(ctx: WalkContext, node: SyntaxNode): string {
  return ctx.source.slice(node.start, node.end);
}

export function report(ctx: WalkContext, reason: string, network: boolean): void {
  ctx.findings.push({ reason, network });
}
