/**
 * The types the command rules and the walk share, in a leaf: the walk's context holds the rule table, and
 * the rules read analysed words, so with these types in either side's module the two import each other.
 */
import type { SyntaxNode } from './syntax-tree.ts';
import type { Finding } from './verdict.ts';

/** What one shell word is worth to the rules (word-analysis.ts computes it). */
export interface WordInfo {
  node: SyntaxNode;
  /** The word as written. */
  text: string;
  /** The value after quote removal when nothing in it is computed at run time; null otherwise. */
  value: string | null;
  /** The fixed start of the value (all of it when `value` is not null). */
  prefix: string;
  /** An unquoted expansion, glob or brace may turn this into zero or several words. */
  splits: boolean;
}

/** Returns why the arguments make the command escalate, or null when they are fine. */
export type ArgCheck = (command: string, args: readonly WordInfo[]) => Finding | null;

export type CommandRule =
  /** Runs locally when `check` (if any) finds nothing wrong with the arguments. */
  { kind: 'local'; check?: ArgCheck } | { kind: 'escalate'; reason: string; network: boolean };

export type CommandRuleTable = ReadonlyMap<string, CommandRule>;
