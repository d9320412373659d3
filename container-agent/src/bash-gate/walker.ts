/**
 * Walks every statement of a parsed command and reports each reason it cannot run locally. Every node
 * type is handled explicitly; a type not listed here is reported as unsupported, so a construct the
 * walk does not understand escalates instead of being skipped.
 */
import { checkArithmetic } from './arithmetic.ts';
import { normalizeCommandName, gitReason } from './command-rules.ts';
import type { CommandRuleTable } from './command-rules.ts';
import { isProtectedVariable, protectedVariableReason, IDENTIFIER_RE } from './shell-variables.ts';
import type { SyntaxNode } from './syntax-tree.ts';
import { checkTestCommand } from './test-rule.ts';
import { quote } from './verdict.ts';
import { report, textOf } from './walk-context.ts';
import type { WalkContext } from './walk-context.ts';
import { couldReachExtraMount, extraMountWrite } from './extra-mount-writes.ts';
import { pathHazard } from './path-hazard.ts';
import { analyzeWord, scanUncovered } from './word-analysis.ts';
import type { WordInfo } from './rule-types.ts';
import { words } from './word-list.ts';
import { possibleDirectories, type WorkingDirectories } from './working-directory.ts';

/** Bare command names we look up; anything else in command position escalates. */
const COMMAND_NAME_RE = /^(?:[A-Za-z0-9_][A-Za-z0-9_.+-]*|:|\.|\[)$/;
const FUNCTION_NAME_RE = /^[A-Za-z_][A-Za-z0-9_.:-]*$/;
const NAMED_FD_RE = /^\{[^{}]*\}$/;

/** Shell keywords and builtins a function must not shadow (the allowlist is checked separately). */
const SHELL_WORDS = new Set(
  words(
    'if then else elif fi case esac for select while until do done function in time coproc declare typeset local export readonly unset',
  ),
);

const DECLARATION_LETTERS: Readonly<Record<string, string>> = {
  export: 'pn',
  readonly: 'paA',
  declare: 'aArxgpluFf',
  typeset: 'aArxgpluFf',
  local: 'aArxgpluFf',
};

/** Only bash's own redirections give these paths a meaning: a socket to the host and port named. */
const NETWORK_PATH_PREFIXES = ['/dev/tcp/', '/dev/udp/'];

function collapseSlashes(path: string): string {
  return path.replace(/\/+/g, '/');
}

export function isNetworkPath(path: string): boolean {
  const normalized = collapseSlashes(path);
  return NETWORK_PATH_PREFIXES.some((p) => normalized.startsWith(p));
}

function mentionsNetworkPath(text: string): boolean {
  return collapseSlashes(text).includes('/dev/tcp/') || collapseSlashes(text).includes('/dev/udp/');
}

function childrenWithField(node: SyntaxNode, field: string): SyntaxNode[] {
  return node.children.filter((c) => c.field === field);
}

export function collectFunctions(source: string, root: SyntaxNode): Map<string, number> {
  const functions = new Map<string, number>();
  for (const statement of root.children) {
    if (statement.type !== 'function_definition') continue;
    const name = statement.children.find((c) => c.field === 'name');
    if (name !== undefined) functions.set(source.slice(name.start, name.end), statement.end);
  }
  // `unset f` / `unset -f f` removes the function; a later `f` would run a program named f.
  const stack = [root];
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    if (node.type === 'unset_command') {
      for (const arg of node.children)
        if (arg.named) functions.delete(source.slice(arg.start, arg.end).replace(/['"\\]/g, ''));
    }
    for (const child of node.children) stack.push(child);
  }
  return functions;
}

function contextWith(
  source: string,
  rules: CommandRuleTable,
  functions: ReadonlyMap<string, number>,
  directories: WorkingDirectories,
): WalkContext {
  const ctx: WalkContext = {
    source,
    rules,
    functions,
    findings: [],
    directories,
    walkStatement: (node) => walkStatement(ctx, node),
  };
  return ctx;
}

/** Words tree-sitter hung on a redirection that are really further arguments (`cd >/dev/null /x`). */
function hasWordsAfterRedirect(node: SyntaxNode): boolean {
  return node.children.some(
    (c) =>
      (c.type === 'file_redirect' && childrenWithField(c, 'destination').length > 1) ||
      (c.type === 'heredoc_redirect' &&
        c.children.some((h) => h.field === 'argument' || h.field === 'redirect')),
  );
}

export function createWalkContext(source: string, rules: CommandRuleTable, root: SyntaxNode): WalkContext {
  const functions = collectFunctions(source, root);
  // Reading the cd targets' words walks what is inside them; what that finds is found again by the walk.
  const scratch = contextWith(source, rules, functions, null);
  const directories = possibleDirectories(
    root,
    (node) => {
      const name = node.children.find((c) => c.field === 'name');
      return name === undefined ? null : textOf(scratch, name);
    },
    (node, parent) =>
      hasWordsAfterRedirect(node) ||
      (parent?.type === 'redirected_statement' && hasWordsAfterRedirect(parent))
        ? null
        : childrenWithField(node, 'argument').map((a) => analyzeWord(scratch, a)),
  );
  return contextWith(source, rules, functions, directories);
}

export function walkStatement(ctx: WalkContext, node: SyntaxNode): void {
  switch (node.type) {
    case 'program':
    case 'list':
    case 'pipeline':
    case 'subshell':
    case 'do_group':
    case 'if_statement':
    case 'elif_clause':
    case 'else_clause':
    case 'while_statement':
    case 'negated_command':
      for (const child of node.children) if (child.named) walkStatement(ctx, child);
      return;
    case 'compound_statement':
      if (node.children[0]?.type === '((') checkArithmetic(ctx, node);
      else for (const child of node.children) if (child.named) walkStatement(ctx, child);
      return;
    case 'comment':
      return;
    case 'command':
      handleCommand(ctx, node, []);
      return;
    case 'redirected_statement':
      handleRedirectedStatement(ctx, node);
      return;
    case 'variable_assignment':
      checkAssignment(ctx, node);
      return;
    case 'variable_assignments':
      for (const child of node.children) if (child.named) walkStatement(ctx, child);
      return;
    case 'declaration_command':
      checkDeclaration(ctx, node);
      return;
    case 'unset_command':
      checkUnset(ctx, node);
      return;
    case 'test_command':
      checkTestCommand(ctx, node);
      return;
    case 'for_statement':
      handleFor(ctx, node);
      return;
    case 'c_style_for_statement':
      for (const child of node.children) {
        if (child.field === 'body') walkStatement(ctx, child);
        else if (child.named) checkArithmetic(ctx, { ...child, children: [child] });
      }
      return;
    case 'case_statement':
      handleCase(ctx, node);
      return;
    case 'function_definition':
      handleFunction(ctx, node);
      return;
    case 'file_redirect':
    case 'heredoc_redirect':
    case 'herestring_redirect': {
      // `$(<file)` holds a bare redirect; extra words after it are not understood.
      const extra = checkRedirect(ctx, node);
      if (extra.length > 0)
        report(ctx, `words after a redirection in ${quote(textOf(ctx, node))} are not understood`, true);
      return;
    }
    case 'ERROR':
      report(ctx, 'parse error', true);
      return;
    default:
      report(ctx, `unsupported construct ${node.type} in ${quote(textOf(ctx, node))}`, true);
  }
}

function handleRedirectedStatement(ctx: WalkContext, node: SyntaxNode): void {
  const extra: SyntaxNode[] = [];
  let body: SyntaxNode | undefined;
  for (const child of node.children) {
    if (child.field === 'body') body = child;
    else if (child.named) extra.push(...checkRedirect(ctx, child));
  }
  if (body?.type === 'command') {
    handleCommand(ctx, body, extra);
    return;
  }
  if (extra.length > 0)
    report(ctx, `words after a redirection in ${quote(textOf(ctx, node))} are not understood`, true);
  if (body !== undefined) walkStatement(ctx, body);
}

/**
 * Checks one redirection and returns the words tree-sitter attached to it that are really further
 * arguments of the command (`find . >out -exec …`, `cat <<EOF file`).
 */
function checkRedirect(ctx: WalkContext, node: SyntaxNode): SyntaxNode[] {
  switch (node.type) {
    case 'file_redirect': {
      const destinations = childrenWithField(node, 'destination');
      const operator = node.children
        .filter((c) => !c.named)
        .map((c) => c.type)
        .join('');
      const target = destinations[0];
      if (target !== undefined) checkRedirectTarget(ctx, target, operator);
      return destinations.slice(1);
    }
    case 'heredoc_redirect':
      return checkHeredoc(ctx, node);
    case 'herestring_redirect':
      for (const child of node.children) {
        if (child.named && child.field !== 'descriptor') analyzeWord(ctx, child);
      }
      return [];
    case 'file_descriptor':
      return [];
    default:
      report(ctx, `unsupported redirection ${node.type} in ${quote(textOf(ctx, node))}`, true);
      return [];
  }
}

function checkRedirectTarget(ctx: WalkContext, target: SyntaxNode, operator: string): void {
  const info = analyzeWord(ctx, target);
  // `>&2`, `<&0`, `>&-`: duplicating or closing a descriptor, no file involved.
  if ((operator === '>&' || operator === '<&') && info.value !== null && /^(?:[0-9]+-?|-)$/.test(info.value))
    return;
  if (target.type === 'process_substitution') return;
  if (info.value !== null && isNetworkPath(info.value)) {
    report(ctx, `redirection to ${quote(info.value)} reaches the network`, true);
    return;
  }
  if (operator.includes('>') && couldReachExtraMount(ctx.directories, info))
    report(ctx, `redirection to ${quote(info.text)} may overwrite a file on an extra mount`, false);
  const hazard = pathHazard(info.text, true);
  if (hazard !== null) report(ctx, `redirection target ${hazard.reason}`, hazard.network);
}

function checkHeredoc(ctx: WalkContext, node: SyntaxNode): SyntaxNode[] {
  const extra: SyntaxNode[] = [];
  const start = node.children.find((c) => c.type === 'heredoc_start');
  // A quoted delimiter (<<'EOF', <<"EOF", <<\EOF) makes the body literal.
  const literal = start !== undefined && /['"\\]/.test(textOf(ctx, start));
  for (const child of node.children) {
    if (!child.named) continue;
    switch (child.type) {
      case 'heredoc_start':
      case 'heredoc_end':
      case 'file_descriptor':
        continue;
      case 'heredoc_body':
        if (literal) continue;
        for (const part of child.children)
          if (part.named && part.type !== 'heredoc_content') analyzeWord(ctx, part, true);
        scanUncovered(ctx, child, child.start, child.end, 'here-doc body');
        continue;
      default:
        if (child.field === 'argument') extra.push(child);
        else if (child.field === 'redirect') extra.push(...checkRedirect(ctx, child));
        else walkStatement(ctx, child);
    }
  }
  return extra;
}

function commandNameOf(ctx: WalkContext, nameNode: SyntaxNode): string | null {
  const parts = nameNode.children.filter((c) => c.named);
  const text = textOf(ctx, nameNode);
  const only = parts[0];
  if (parts.length === 1 && only !== undefined && only.type === 'word' && COMMAND_NAME_RE.test(text))
    return text;
  if (parts.length === 1 && only?.type === 'word' && text.includes('/') && !/[\\'"$`*?[{~]/.test(text)) {
    report(ctx, `${quote(text)} runs a program by path; only allowlisted names run locally`, true);
  } else {
    report(ctx, `command name ${quote(text)} is not a literal word`, true);
  }
  // Still walk it: `$(curl …)` in command position should be named too.
  for (const part of parts) analyzeWord(ctx, part);
  return null;
}

function handleCommand(ctx: WalkContext, node: SyntaxNode, extra: readonly SyntaxNode[]): void {
  let nameNode: SyntaxNode | undefined;
  const argNodes: SyntaxNode[] = [...extra];
  for (const child of node.children) {
    if (!child.named) continue;
    if (child.field === 'name') nameNode = child;
    else if (child.field === 'argument') argNodes.push(child);
    else if (child.field === 'redirect') argNodes.push(...checkRedirect(ctx, child));
    else if (child.type === 'variable_assignment') checkAssignment(ctx, child);
    else if (child.type === 'comment') continue;
    else report(ctx, `unsupported construct ${child.type} in ${quote(textOf(ctx, node))}`, true);
  }
  argNodes.sort((a, b) => a.start - b.start);
  for (const arg of argNodes) {
    // `{name}>file` opens a descriptor and assigns its number to name (`{PATH}>x` sets PATH=10).
    if (NAMED_FD_RE.test(textOf(ctx, arg)) && (ctx.source[arg.end] === '>' || ctx.source[arg.end] === '<')) {
      report(
        ctx,
        `${quote(textOf(ctx, arg))} before a redirection assigns a descriptor number to a variable`,
        true,
      );
    }
  }
  const args = argNodes.map((a) => analyzeWord(ctx, a));
  for (const arg of args) {
    if (mentionsNetworkPath(arg.text) || (arg.value !== null && isNetworkPath(arg.value))) {
      report(ctx, `argument ${quote(arg.text)} names a /dev/tcp or /dev/udp socket`, true);
    }
    const hazard = pathHazard(arg.text, false);
    if (hazard !== null) report(ctx, `argument ${hazard.reason}`, hazard.network);
  }
  if (nameNode === undefined) return;
  const name = commandNameOf(ctx, nameNode);
  if (name === null) return;
  // A function surely defined earlier in this command: its body is checked where it is defined.
  const definedUntil = ctx.functions.get(name);
  if (definedUntil !== undefined && definedUntil <= node.start) return;
  checkCommandRule(ctx, name, args);
  const write = extraMountWrite(name, args, ctx.directories);
  if (write !== null) report(ctx, write, false);
}

function checkCommandRule(ctx: WalkContext, name: string, args: readonly WordInfo[]): void {
  const rule = ctx.rules.get(name) ?? ctx.rules.get(normalizeCommandName(name));
  if (rule === undefined) {
    report(ctx, `${name} is not on the local allowlist`, true);
    return;
  }
  if (rule.kind === 'escalate') {
    report(ctx, (name === 'git' ? gitReason(args) : null) ?? rule.reason, rule.network);
    return;
  }
  const found = rule.check?.(name, args) ?? null;
  if (found !== null) report(ctx, found.reason, found.network);
}

function checkSubscriptName(ctx: WalkContext, nameNode: SyntaxNode): string {
  if (nameNode.type !== 'subscript') return textOf(ctx, nameNode);
  const base = nameNode.children.find((c) => c.field === 'name');
  const index = nameNode.children.find((c) => c.field === 'index');
  const indexText = index === undefined ? '' : textOf(ctx, index);
  if (
    index === undefined ||
    index.type !== 'number' ||
    index.children.length > 0 ||
    !/^[0-9]+$/.test(indexText)
  ) {
    report(
      ctx,
      `assignment to ${quote(textOf(ctx, nameNode))}: array subscripts are evaluated as code`,
      true,
    );
  }
  return base === undefined ? '' : textOf(ctx, base);
}

function checkAssignment(ctx: WalkContext, node: SyntaxNode): void {
  for (const child of node.children) {
    if (!child.named) continue;
    if (child.field === 'name') {
      const name = checkSubscriptName(ctx, child);
      if (isProtectedVariable(name)) report(ctx, protectedVariableReason(name), true);
      continue;
    }
    if (child.type === 'array') {
      for (const element of child.children) {
        if (!element.named) continue;
        // `a=([key]=value)`: the key is evaluated as arithmetic (or is a string key we don't track).
        if (textOf(ctx, element).startsWith('[')) {
          report(ctx, `array element ${quote(textOf(ctx, element))}: subscripts are evaluated as code`, true);
        }
        analyzeWord(ctx, element);
      }
      continue;
    }
    analyzeWord(ctx, child);
    reportPathHazard(ctx, child, 'assigned value');
  }
}

/** A value kept in a variable may be used as a path later (`p=/pro[c]; cat $p/1/environ`). */
function reportPathHazard(ctx: WalkContext, node: SyntaxNode, what: string): void {
  const hazard = pathHazard(textOf(ctx, node), false);
  if (hazard !== null) report(ctx, `${what} ${hazard.reason}`, hazard.network);
}

function checkDeclaration(ctx: WalkContext, node: SyntaxNode): void {
  const keyword = node.children[0]?.type ?? '';
  const letters = DECLARATION_LETTERS[keyword];
  if (letters === undefined) {
    report(ctx, `unsupported declaration ${quote(textOf(ctx, node))}`, true);
    return;
  }
  for (const child of node.children.slice(1)) {
    if (!child.named) continue;
    if (child.type === 'variable_assignment') {
      checkAssignment(ctx, child);
      continue;
    }
    const info = analyzeWord(ctx, child);
    if (info.value === null) {
      report(ctx, `${keyword} argument ${quote(info.text)} is computed at run time`, true);
      continue;
    }
    if (/^[-+]/.test(info.value)) {
      const bad = [...info.value.slice(1)].find((l) => !letters.includes(l));
      if (bad !== undefined || info.value.length === 1) {
        report(ctx, `${keyword} ${quote(info.value)} is not on the local allowlist`, true);
      }
      continue;
    }
    if (!IDENTIFIER_RE.test(info.value)) {
      report(ctx, `${keyword} ${quote(info.value)} is not a plain variable name`, true);
    } else if (isProtectedVariable(info.value)) {
      report(ctx, protectedVariableReason(info.value), true);
    }
  }
}

function checkUnset(ctx: WalkContext, node: SyntaxNode): void {
  for (const child of node.children.slice(1)) {
    if (!child.named) continue;
    const info = analyzeWord(ctx, child);
    if (info.value !== null && /^-[vfn]+$/.test(info.value)) continue;
    if (info.value === null || !IDENTIFIER_RE.test(info.value)) {
      report(ctx, `unset ${quote(info.text)} is not a plain name; bash would evaluate its subscript`, true);
    }
  }
}

function handleFor(ctx: WalkContext, node: SyntaxNode): void {
  for (const child of node.children) {
    if (!child.named) continue;
    if (child.field === 'variable') {
      const name = textOf(ctx, child);
      if (isProtectedVariable(name)) report(ctx, protectedVariableReason(name), true);
    } else if (child.field === 'value') {
      analyzeWord(ctx, child);
      reportPathHazard(ctx, child, 'loop value');
    } else if (child.field === 'body') {
      walkStatement(ctx, child);
    } else if (child.type !== 'comment') {
      report(ctx, `unsupported construct ${child.type} in a for loop`, true);
    }
  }
}

function handleCase(ctx: WalkContext, node: SyntaxNode): void {
  for (const child of node.children) {
    if (!child.named) continue;
    if (child.field === 'value') {
      analyzeWord(ctx, child);
      continue;
    }
    if (child.type !== 'case_item') {
      if (child.type !== 'comment') report(ctx, `unsupported construct ${child.type} in case`, true);
      continue;
    }
    for (const part of child.children) {
      if (!part.named) continue;
      if (part.field === 'value') analyzeWord(ctx, part);
      else walkStatement(ctx, part);
    }
  }
}

function handleFunction(ctx: WalkContext, node: SyntaxNode): void {
  for (const child of node.children) {
    if (!child.named) continue;
    if (child.field === 'name') {
      const name = textOf(ctx, child);
      if (!FUNCTION_NAME_RE.test(name)) {
        report(ctx, `function name ${quote(name)} is not a plain name`, true);
      } else if (ctx.rules.has(name) || ctx.rules.has(normalizeCommandName(name)) || SHELL_WORDS.has(name)) {
        report(ctx, `function ${name} shadows the command of the same name`, true);
      }
    } else if (child.field === 'redirect') {
      const extra = checkRedirect(ctx, child);
      if (extra.length > 0) report(ctx, `words after a function's redirection are not understood`, true);
    } else {
      walkStatement(ctx, child);
    }
  }
}
