import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * Import cycles among the project's own TypeScript and JavaScript files (bin/ is plain JavaScript), found with the compiler's own parser and module
 * resolution (no lint plugin: the one tried pinned platform-specific binaries into the lock file).
 *
 * Type-only imports count: a cycle of types is still two modules that cannot be understood, moved or tested
 * one without the other, and it is how runtime cycles start.
 */

export interface ImportGraph {
  /** Absolute file path → the absolute paths of the project files it imports. */
  edges: Map<string, string[]>;
  /** The subset of `edges` that loads code at run time (not `import type`/`export type` alone). */
  valueEdges?: Map<string, string[]>;
}

const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  allowImportingTsExtensions: true,
  resolveJsonModule: true,
};

/**
 * Every .ts and .js file under the given folders (bin/ and the Node check it runs first are plain
 * JavaScript), skipping declaration files, node_modules and build output.
 */
export function listTsFiles(dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts'))
        out.push(full);
    }
  };
  for (const dir of dirs) if (fs.existsSync(dir)) walk(dir);
  return out.sort();
}

/** The import graph among `files` (imports of anything outside them, packages included, are left out). */
export function buildImportGraph(files: readonly string[]): ImportGraph {
  const known = new Set(files.map((f) => path.resolve(f)));
  const host = ts.createCompilerHost(COMPILER_OPTIONS);
  const cache = ts.createModuleResolutionCache(process.cwd(), (f) => f, COMPILER_OPTIONS);
  const edges = new Map<string, string[]>();
  const valueEdges = new Map<string, string[]>();
  for (const file of known) {
    const text = fs.readFileSync(file, 'utf8');
    const info = ts.preProcessFile(text, true, true);
    const valueSpecifiers = valueImportSpecifiers(file, text);
    const targets = new Set<string>();
    const valueTargets = new Set<string>();
    for (const ref of info.importedFiles) {
      if (!ref.fileName.startsWith('.')) continue;
      const resolved = ts.resolveModuleName(
        ref.fileName,
        file,
        COMPILER_OPTIONS,
        host,
        cache,
        undefined,
        ts.ModuleKind.ESNext,
      ).resolvedModule;
      const target = resolved ? implementationOf(path.resolve(resolved.resolvedFileName)) : undefined;
      if (!target || !known.has(target) || target === file) continue;
      targets.add(target);
      if (valueSpecifiers.has(ref.fileName)) valueTargets.add(target);
    }
    edges.set(file, [...targets].sort());
    valueEdges.set(file, [...valueTargets].sort());
  }
  return { edges, valueEdges };
}

/** A JavaScript file's own path where the compiler resolved its import to the declaration file beside it. */
function implementationOf(file: string): string {
  const js = file.replace(/\.d\.ts$/, '.js');
  return js !== file && fs.existsSync(js) ? js : file;
}

/**
 * The specifiers a file loads at run time: every import or re-export except those that name types only
 * (`import type`, `export type … from`, or an import whose every named binding is `type`), plus `import()`.
 */
function valueImportSpecifiers(file: string, text: string): Set<string> {
  const kind = file.endsWith('.js') ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const out = new Set<string>();
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly) out.add(node.moduleSpecifier.text);
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const typeOnly =
        node.isTypeOnly ||
        (node.exportClause !== undefined &&
          ts.isNamedExports(node.exportClause) &&
          node.exportClause.elements.length > 0 &&
          node.exportClause.elements.every((e) => e.isTypeOnly));
      if (!typeOnly) out.add(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      out.add(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

/**
 * The subsystem a host file belongs to: its folder right under `host/` (`host/containers/run/x.ts` is
 * `host/containers`); files directly in `host/` belong to none. `bin/`, the CLI's entry point, counts as
 * one more folder above them all, so an import from the host back into it is a folder cycle or an upward
 * import like any other.
 */
export function subsystemOf(root: string, file: string): string | undefined {
  const parts = path.relative(root, file).split(path.sep);
  if (parts[0] === 'bin' && parts.length > 1) return 'bin';
  return parts[0] === 'host' && parts.length > 2 ? `host/${parts[1]}` : undefined;
}

/**
 * The graph of host subsystems that load each other's code at run time. Type-only imports are left out
 * here: a subsystem may name another's types (they vanish when compiled) without the two depending on
 * each other's behaviour. `reasons` names one file-level import behind each arrow, for the message.
 */
export function buildFolderGraph(
  graph: ImportGraph,
  root: string,
): { graph: ImportGraph; reasons: Map<string, string> } {
  const edges = new Map<string, Set<string>>();
  const reasons = new Map<string, string>();
  for (const [file, targets] of graph.valueEdges ?? graph.edges) {
    const from = subsystemOf(root, file);
    if (!from) continue;
    if (!edges.has(from)) edges.set(from, new Set());
    for (const target of targets) {
      const to = subsystemOf(root, target);
      if (!to || to === from) continue;
      edges.get(from)!.add(to);
      const key = `${from} → ${to}`;
      if (!reasons.has(key))
        reasons.set(key, `${path.relative(root, file)} imports ${path.relative(root, target)}`);
    }
  }
  return {
    graph: { edges: new Map([...edges].map(([k, v]) => [k, [...v].sort()])) },
    reasons,
  };
}

/**
 * The host's subsystems, top to bottom (DESIGN.md, "Layout"): a file may import only from its own
 * subsystem or one listed after it. Subsystems in one inner list stand side by side and import none of
 * each other. A folder under `host/` that is missing here fails the lint, so a new one gets a place.
 */
export const SUBSYSTEM_LAYERS: readonly (readonly string[])[] = [
  ['cli'],
  ['app'],
  ['web'],
  ['config'],
  ['containers'],
  ['ipc'],
  ['router', 'scheduler', 'memory'],
  ['security'],
  ['admin'],
  ['channels', 'gateway', 'backup'],
  ['store', 'services'],
  ['safe-fs'],
  ['errors', 'logging', 'time'],
];

/**
 * Type-only imports allowed to point up, each explained in DESIGN.md ("Layout"); `from → to` as file paths.
 * Empty: a shape two layers share lives in the lower one (the one that drives or owns it).
 */
export const ALLOWED_UPWARD_IMPORTS: ReadonlySet<string> = new Set<string>([]);

/** Imports (type-only ones included) from a subsystem to one above it or beside it, unless allowed. */
export function findUpwardImports(graph: ImportGraph, root: string): string[] {
  const rank = new Map<string, number>();
  SUBSYSTEM_LAYERS.forEach((layer, i) => layer.forEach((name) => rank.set(`host/${name}`, i)));
  rank.set('bin', -1); // the entry point, above every host subsystem
  const out: string[] = [];
  const unplaced = new Set<string>();
  for (const [file, targets] of graph.edges) {
    const from = subsystemOf(root, file);
    if (!from) continue;
    if (!rank.has(from)) unplaced.add(from);
    for (const target of targets) {
      const to = subsystemOf(root, target);
      if (!to || to === from || !rank.has(from) || !rank.has(to)) continue;
      if (rank.get(to)! > rank.get(from)!) continue;
      const edge = `${path.relative(root, file)} → ${path.relative(root, target)}`;
      if (!ALLOWED_UPWARD_IMPORTS.has(edge)) out.push(`upward import: ${edge} (${to} is not below ${from})`);
    }
  }
  for (const folder of unplaced) {
    out.push(
      `${folder} has no place in SUBSYSTEM_LAYERS (scripts/lint/import-cycles.ts): add it where it belongs`,
    );
  }
  return out.sort();
}

/** The lint's message for folder cycles: each arrow of the loop with one import that makes it. */
export function describeFolderCycles(cycles: ImportCycle[], reasons: Map<string, string>): string {
  return cycles
    .map((c) => {
      const arrows = c.loop.slice(1).map((to, i) => {
        const key = `${c.loop[i]} → ${to}`;
        return `  ${key}: ${reasons.get(key) ?? '?'}`;
      });
      return (
        `folder cycle: ${c.loop.join(' → ')}\n${arrows.join('\n')}\n` +
        '  subsystems must depend one way: move the shared part into the lower folder, or pass it in as a dependency'
      );
    })
    .join('\n');
}

export interface ImportCycle {
  /** One concrete loop, first file repeated at the end. */
  loop: string[];
  /** Every file of the strongly connected component the loop lies in (all must be untangled). */
  members: string[];
}

/** Strongly connected components with more than one file (Tarjan), each with one loop through them. */
export function findCycles(graph: ImportGraph): ImportCycle[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  let next = 0;
  // Iterative, so a long import chain cannot overflow the call stack.
  for (const root of graph.edges.keys()) {
    if (index.has(root)) continue;
    const work: { node: string; i: number }[] = [{ node: root, i: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const targets = graph.edges.get(frame.node) ?? [];
      if (frame.i < targets.length) {
        const t = targets[frame.i++]!;
        if (!index.has(t)) {
          index.set(t, next);
          low.set(t, next++);
          stack.push(t);
          onStack.add(t);
          work.push({ node: t, i: 0 });
        } else if (onStack.has(t)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(t)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1) components.push(component.sort());
      }
    }
  }
  return components.map((c) => ({ loop: cycleThrough(graph, c), members: c }));
}

/** One concrete loop inside a component (shortest path from its first file back to itself), for the message. */
function cycleThrough(graph: ImportGraph, component: string[]): string[] {
  const members = new Set(component);
  const start = component[0]!;
  const prev = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const t of graph.edges.get(node) ?? []) {
      if (!members.has(t)) continue;
      if (t === start) {
        const loop = [node];
        while (loop[0] !== start) loop.unshift(prev.get(loop[0]!)!);
        return [...loop, start];
      }
      if (!prev.has(t)) {
        prev.set(t, node);
        queue.push(t);
      }
    }
  }
  return [...component, start];
}

/** The lint's message for the cycles found, relative to `root`; empty when there are none. */
export function describeCycles(cycles: ImportCycle[], root: string): string {
  const rel = (f: string) => path.relative(root, f);
  return cycles
    .map(
      (c) =>
        `import cycle: ${c.loop.map(rel).join(' → ')}\n` +
        (c.members.length > c.loop.length - 1
          ? `  (${c.members.length} files import each other in a ring: ${c.members.map(rel).join(', ')})\n`
          : '') +
        '  move what both sides need (types, constants) into a leaf module both import, or pass it in as a dependency',
    )
    .join('\n');
}

export const LINTED_DIRS = ['host', 'container-agent/src', 'scripts', 'test', 'bin'];

// `node --import tsx scripts/lint/import-cycles.ts [root]`: part of `npm run lint`; exits 1 on any cycle.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = path.resolve(process.argv[2] ?? process.cwd());
  const graph = buildImportGraph(listTsFiles(LINTED_DIRS.map((d) => path.join(root, d))));
  const cycles = findCycles(graph);
  const folders = buildFolderGraph(graph, root);
  const folderCycles = findCycles(folders.graph);
  if (cycles.length > 0) console.error(describeCycles(cycles, root));
  if (folderCycles.length > 0) console.error(describeFolderCycles(folderCycles, folders.reasons));
  const upward = findUpwardImports(graph, root);
  if (upward.length > 0) {
    console.error(upward.join('\n'));
    console.error(
      '  arrows point down (DESIGN.md, "Layout"): move the shared part into the lower folder, or pass it in',
    );
  }
  if (cycles.length + folderCycles.length + upward.length > 0) {
    console.error(
      `${cycles.length} import cycle(s), ${folderCycles.length} folder cycle(s), ${upward.length} upward import(s); npm run lint fails until they are gone.`,
    );
    process.exit(1);
  }
}
