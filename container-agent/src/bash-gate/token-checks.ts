/**
 * Places where bash and tree-sitter split the source into words differently. The walk trusts the
 * parser's words, so input showing one of these escalates before it is walked.
 *
 * - Bash removes backslash-newline before splitting words; tree-sitter reads it as a space, so
 *   `tr\⏎aceroute` is `traceroute` to bash but `tr aceroute` to the parser.
 * - Bash starts a comment only at the start of a word; tree-sitter also starts one after an escaped
 *   blank, so in `echo a\<tab>#$(cmd)` it hides a substitution that bash runs.
 * - tree-sitter sometimes skips source text outside any token: in `sed 'p'\ \;e\ id` it drops the
 *   escaped blank and makes two words of what bash reads as one script, `p ;e id`. Outside quoted text,
 *   everything between tokens must be blanks or line continuations.
 */
import type { SyntaxNode } from './syntax-tree.ts';

/** Tokens made only of metacharacters end a word even when a line continuation follows them. */
const METACHAR_TOKEN_RE = /^[|&;()<>]+$/;
const COMMENT_MAY_FOLLOW = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);

function escapedAt(source: string, index: number): boolean {
  let backslashes = 0;
  for (let i = index - 1; i >= 0 && source[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 1;
}

function commentProblem(source: string, node: SyntaxNode): string | null {
  if (node.start === 0) return null;
  const before = source[node.start - 1] as string;
  if (COMMENT_MAY_FOLLOW.has(before) && !escapedAt(source, node.start - 1)) return null;
  return 'a # that bash reads as part of a word, not as a comment, hides the rest of the line from the parser';
}

/** Nodes whose children are separated by literal text rather than by blanks. */
const LITERAL_TEXT_NODES = new Set(['string', 'translated_string', 'heredoc_body']);
const BLANK_GAP_RE = /^(?:[ \t\n]|\\\n)*$/;

function skippedText(source: string, node: SyntaxNode): string | null {
  let pos = node.start;
  for (const child of node.children) {
    if (child.start > pos && !BLANK_GAP_RE.test(source.slice(pos, child.start)))
      return source.slice(pos, child.start);
    pos = Math.max(pos, child.end);
  }
  if (node.end > pos && !BLANK_GAP_RE.test(source.slice(pos, node.end))) return source.slice(pos, node.end);
  return null;
}

export function findWordSplitMismatch(source: string, root: SyntaxNode): string | null {
  const stack = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (node.children.length > 0) {
      if (!LITERAL_TEXT_NODES.has(node.type)) {
        const skipped = skippedText(source, node);
        if (skipped !== null)
          return `the parser skipped ${JSON.stringify(skipped)}, so it may split words differently from bash`;
      }
      for (const child of node.children) stack.push(child);
      continue;
    }
    if (node.type === 'comment') {
      const problem = commentProblem(source, node);
      if (problem !== null) return problem;
      continue;
    }
    if (source[node.end] !== '\\' || source[node.end + 1] !== '\n') continue;
    const text = source.slice(node.start, node.end);
    if (METACHAR_TOKEN_RE.test(text)) continue;
    return `a line continuation right after ${JSON.stringify(text)} joins words differently in bash`;
  }
  return null;
}
