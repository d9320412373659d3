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
import { words } from './word-list.ts';

/** Tokens made only of metacharacters end a word even when a line continuation follows them. */
const METACHAR_TOKEN_RE = /^[|&;()<>]+$/;
const COMMENT_MAY_FOLLOW = new Set([' ', '\t', '\n', ';', '&', '|', '(', ')', '<', '>']);

function escapedAt(source: string, index: number): boolean {
  let backslashes = 0;
  for (let i = index - 1; i >= 0 && source[i] === '\\'; i--) backslashes++;
  return backslashes % 2 === 1;
}

function commentProblem(source: string, node: SyntaxNode): string | null {
  // Bash ignores a backslash at the end of a comment; tree-sitter may read it as a line continuation.
  if (source.slice(node.start, node.end).endsWith('\\'))
    return 'a comment ending in a backslash is read differently by bash';
  if (node.start === 0) return null;
  const before = source[node.start - 1] as string;
  if (COMMENT_MAY_FOLLOW.has(before) && !escapedAt(source, node.start - 1)) return null;
  return 'a # that bash reads as part of a word, not as a comment, hides the rest of the line from the parser';
}

/** Nodes whose children are separated by literal text rather than by blanks. */
const LITERAL_TEXT_NODES = new Set(['string', 'translated_string', 'heredoc_body']);
const BLANK_GAP_RE = /^(?:[ \t\n]|\\\n)*$/;

/** Node types that each stand for (part of) one shell word. */
const WORD_NODES = new Set(
  words(`
    word string raw_string ansi_c_string translated_string concatenation simple_expansion expansion
    command_substitution process_substitution arithmetic_expansion number brace_expression
  `),
);
/** Parents whose children are the words of one simple command: a comment cannot sit between them. */
const WORD_LIST_PARENTS = new Set(
  words('command declaration_command unset_command file_redirect heredoc_redirect'),
);

function isWordLike(node: SyntaxNode): boolean {
  // `\$` reaches us as an anonymous `$` token.
  return (
    WORD_NODES.has(node.type) ||
    node.type === '$' ||
    node.type === 'command_name' ||
    node.type === 'variable_assignment'
  );
}

/** Parents whose word children are meant to touch: the parts of one word. */
const ONE_WORD_PARENTS = new Set(
  words('concatenation string translated_string heredoc_body expansion subscript'),
);

function gapProblem(source: string, parent: SyntaxNode): string | null {
  let pos = parent.start;
  let previous: SyntaxNode | null = null;
  for (const child of parent.children) {
    if (child.start > pos && !BLANK_GAP_RE.test(source.slice(pos, child.start))) {
      return `the parser skipped ${JSON.stringify(source.slice(pos, child.start))}, so it may split words differently from bash`;
    }
    if (previous?.type === 'comment' && WORD_LIST_PARENTS.has(parent.type)) {
      return 'the parser continued a command after a comment, where bash ends it';
    }
    // Two words with nothing between them are one word to bash (`''\$` is `$`).
    if (
      previous !== null &&
      child.start === previous.end &&
      isWordLike(previous) &&
      isWordLike(child) &&
      !ONE_WORD_PARENTS.has(parent.type)
    ) {
      return `the parser split ${JSON.stringify(source.slice(previous.start, child.end))} into two words where bash reads one`;
    }
    pos = Math.max(pos, child.end);
    previous = child;
  }
  if (parent.end > pos && !BLANK_GAP_RE.test(source.slice(pos, parent.end))) {
    return `the parser skipped ${JSON.stringify(source.slice(pos, parent.end))}, so it may split words differently from bash`;
  }
  return null;
}

export function findWordSplitMismatch(source: string, root: SyntaxNode): string | null {
  const stack = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (node.children.length > 0) {
      if (!LITERAL_TEXT_NODES.has(node.type)) {
        const problem = gapProblem(source, node);
        if (problem !== null) return problem;
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
