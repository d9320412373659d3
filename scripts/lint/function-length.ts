import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { listTsFiles } from './import-cycles.ts';

/**
 * No function over MAX_FUNCTION_LINES lines of code in the host or the container agent (DESIGN.md,
 * "Layout"): past that a closure holds several jobs that want names and files of their own, as the
 * Telegram adapter's handlers/connection/channel split shows. Lines are counted like ESLint's
 * `max-lines-per-function` with `skipBlankLines` and `skipComments`: a line counts when code is on it, and
 * a nested function counts toward every function around it.
 */
export const MAX_FUNCTION_LINES = 200;

export const LENGTH_LINTED_DIRS = ['host', 'container-agent/src'];

/**
 * Functions allowed over the limit, as `file name`: empty since issue 39 split the last of them. Kept as a
 * parameter so the lint's own test can plant one; an entry here needs a reason in DESIGN.md.
 */
export const TEMPORARILY_LONG_FUNCTIONS: ReadonlySet<string> = new Set<string>();

export interface LongFunction {
  /** Path relative to the root, `/`-separated. */
  file: string;
  name: string;
  line: number;
  lines: number;
}

/** The name a reader would search for: the declaration's own, or the variable or property it is assigned to. */
function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) && parent.name)
    return parent.name.getText(source);
  for (let up = parent; up; up = up.parent) {
    if (ts.isFunctionLike(up)) return `(anonymous in ${nameOf(up, source)})`;
  }
  return '(anonymous)';
}

/** Every function in one file longer than `max` lines of code. */
export function longFunctionsIn(file: string, root: string, max = MAX_FUNCTION_LINES): LongFunction[] {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(
    file,
    text,
    {
      languageVersion: ts.ScriptTarget.Latest,
      jsDocParsingMode: ts.JSDocParsingMode.ParseNone,
    },
    true,
    file.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS,
  );
  const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line;

  // Lines holding a token of code: comments and blank lines are trivia between tokens, so never marked.
  const codeLines = new Set<number>();
  const markTokens = (node: ts.Node) => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = node.getChildren(source);
    if (children.length === 0) {
      if (node.kind === ts.SyntaxKind.EndOfFileToken) return;
      for (let l = lineOf(node.getStart(source)); l <= lineOf(node.getEnd()); l++) codeLines.add(l);
      return;
    }
    children.forEach(markTokens);
  };
  markTokens(source);

  const out: LongFunction[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = lineOf(node.getStart(source));
      const last = lineOf(node.getEnd());
      let lines = 0;
      for (let l = first; l <= last; l++) if (codeLines.has(l)) lines++;
      if (lines > max) {
        out.push({
          file: path.relative(root, file).split(path.sep).join('/'),
          name: nameOf(node, source),
          line: first + 1,
          lines,
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The functions over the limit under `dirs` that are not on the temporary list, and stale list entries. */
export function findLongFunctions(
  root: string,
  dirs: readonly string[] = LENGTH_LINTED_DIRS,
  allowed: ReadonlySet<string> = TEMPORARILY_LONG_FUNCTIONS,
): string[] {
  const found = listTsFiles(dirs.map((d) => path.join(root, d))).flatMap((f) => longFunctionsIn(f, root));
  const seen = new Set(found.map((f) => `${f.file} ${f.name}`));
  const problems = found
    .filter((f) => !allowed.has(`${f.file} ${f.name}`))
    .map(
      (f) =>
        `function too long: ${f.name} (${f.file}:${f.line}) has ${f.lines} lines of code, over ${MAX_FUNCTION_LINES}\n` +
        '  split it along its jobs into named functions, in files of their own where they are a subsystem part',
    );
  for (const entry of allowed) {
    if (!seen.has(entry)) {
      problems.push(
        `TEMPORARILY_LONG_FUNCTIONS lists "${entry}", which is no longer over ${MAX_FUNCTION_LINES} lines (or moved): remove the entry (scripts/lint/function-length.ts)`,
      );
    }
  }
  return problems;
}

// `node --import tsx scripts/lint/function-length.ts [root]`: part of `npm run lint`; exits 1 on a long function.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(process.argv[2] ?? process.cwd());
  const problems = findLongFunctions(root);
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    console.error(`${problems.length} problem(s); npm run lint fails until they are gone.`);
    process.exit(1);
  }
}
