import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { listTsFiles } from './import-cycles.ts';

/**
 * Host code takes time from the `Clock` passed in (host/time/clock.ts, with sleepOn / timeoutSignal /
 * repeatEvery in clock-timers.ts), so a test moves a fake clock instead of waiting (DESIGN.md, "never a
 * pause"). A raw `setTimeout`, `setInterval`, `AbortSignal.timeout` or an import of `node:timers` outside
 * host/time/ is a timer no test can drive; this lint fails on one.
 */
export const TIMER_LINTED_DIRS = ['host'];

/** Where the real timers live: the one place allowed to call them. */
const TIME_DIR = 'host/time/';

/**
 * Files that still hold a raw timer, each with why it is there. An entry goes when its file moves onto
 * the Clock; a stale entry fails the lint so the list only shrinks.
 */
export const RAW_TIMER_ALLOWED: ReadonlyMap<string, string> = new Map(
  Object.entries({
    // One-shot CLI processes: a wait there must hold the process open, which the system clock's unref'd
    // timers do not, and their tests run the CLI as a process of its own, where no fake clock reaches.
    'host/channels/local/local-client.ts':
      "the CLI's client of the control socket: connect and answer deadlines in a one-shot process, tested end to end against a wedged host (cli-wedged-host.test.ts)",
    'host/channels/local/send-and-wait.ts':
      '`send` and `approve`: the pause before reconnecting to a restarting host must hold the one-shot process open',
    'host/cli/chat-repl.ts':
      '`carapace chat`: the pause before reconnecting to a restarting host must hold the process open',
    'host/cli/commands/doctor-command.ts': "`carapace doctor`: the bound on the Docker engine's answer",
    'host/cli/commands/doctor-config-checks.ts': '`carapace doctor`: the bound on the provider probe',
    'host/cli/commands/doctor-service-checks.ts': "`carapace doctor`: the bound on an MCP server's start",
    'host/cli/commands/stop-command.ts':
      "`carapace stop`: polls for the host's pid to go (another process's doing); the pause must hold the process open",
    'host/cli/commands/whatsapp-command.ts':
      '`carapace whatsapp login`: the "still waiting" line at the terminal while the phone links',
    'host/containers/image/image-build-lock.ts':
      "waits for another process's image build (a lock file it holds), also in `carapace image build`, where the pause must hold the process open",
  }),
);

// `setImmediate` is left out: it yields to the event loop once and waits for no time.
const RAW_TIMER_NAMES = new Set(['setTimeout', 'setInterval']);
const TIMER_MODULES = new Set(['timers', 'node:timers', 'timers/promises', 'node:timers/promises']);

export interface RawTimer {
  /** Path relative to the root, `/`-separated. */
  file: string;
  line: number;
  what: string;
}

/** Is `node` a type position (`ReturnType<typeof setTimeout>`), which arms no timer? */
function inTypeQuery(node: ts.Node): boolean {
  for (let up = node.parent; up; up = up.parent) {
    if (ts.isTypeQueryNode(up)) return true;
    if (ts.isStatement(up) || ts.isExpression(up)) return false;
  }
  return false;
}

/** Every raw timer in one file: calls, references (`globalThis.setTimeout`, passing it on) and imports. */
export function rawTimersIn(file: string, root: string): RawTimer[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const rel = path.relative(root, file).split(path.sep).join('/');
  const out: RawTimer[] = [];
  const add = (node: ts.Node, what: string) =>
    out.push({ file: rel, line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, what });
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier) &&
      TIMER_MODULES.has(node.moduleSpecifier.text)
    ) {
      add(node, `import from '${node.moduleSpecifier.text}'`);
    } else if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'import' &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0]) &&
      TIMER_MODULES.has(node.arguments[0].text)
    ) {
      add(node, `import('${node.arguments[0].text}')`);
    } else if (
      ts.isPropertyAccessExpression(node) &&
      node.expression.getText(source) === 'AbortSignal' &&
      node.name.text === 'timeout'
    ) {
      add(node, 'AbortSignal.timeout');
    } else if (ts.isIdentifier(node) && RAW_TIMER_NAMES.has(node.text) && !inTypeQuery(node)) {
      const parent = node.parent;
      // A declaration of that name (a property of an object, a parameter) is not the global timer.
      const declared =
        (ts.isPropertyAssignment(parent) && parent.name === node) ||
        (ts.isMethodDeclaration(parent) && parent.name === node) ||
        (ts.isPropertySignature(parent) && parent.name === node) ||
        (ts.isMethodSignature(parent) && parent.name === node) ||
        (ts.isParameter(parent) && parent.name === node) ||
        ts.isImportSpecifier(parent);
      const ownProperty =
        ts.isPropertyAccessExpression(parent) &&
        parent.name === node &&
        !['globalThis', 'global', 'window'].includes(parent.expression.getText(source));
      if (!declared && !ownProperty) add(node, node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/** The raw timers under `dirs` outside host/time/ and not on the allow-list, and stale allow-list entries. */
export function findRawTimers(
  root: string,
  dirs: readonly string[] = TIMER_LINTED_DIRS,
  allowed: ReadonlyMap<string, string> = RAW_TIMER_ALLOWED,
): string[] {
  const found = listTsFiles(dirs.map((d) => path.join(root, d)))
    .flatMap((f) => rawTimersIn(f, root))
    .filter((t) => !t.file.startsWith(TIME_DIR));
  const seen = new Set(found.map((t) => t.file));
  const problems = found
    .filter((t) => !allowed.has(t.file))
    .map(
      (t) =>
        `raw timer: ${t.what} (${t.file}:${t.line})\n` +
        '  take a Clock as a dependency and use clock.setTimer, or sleepOn / timeoutSignal / repeatEvery from host/time/clock-timers.ts, so tests move a fake clock',
    );
  for (const file of allowed.keys()) {
    if (!seen.has(file)) {
      problems.push(
        `RAW_TIMER_ALLOWED lists "${file}", which holds no raw timer any more (or moved): remove the entry (scripts/lint/raw-timers.ts)`,
      );
    }
  }
  return problems;
}

// `node --import tsx scripts/lint/raw-timers.ts [root]`: part of `npm run lint`; exits 1 on a raw timer.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(process.argv[2] ?? process.cwd());
  const problems = findRawTimers(root);
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    console.error(`${problems.length} problem(s); npm run lint fails until they are gone.`);
    process.exit(1);
  }
}
