import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * Import cycles among the project's own TypeScript files, found with the compiler's own parser and module
 * resolution (no lint plugin: the one tried pinned platform-specific binaries into the lock file).
 *
 * Type-only imports count: a cycle of types is still two modules that cannot be understood, moved or tested
 * one without the other, and it is how runtime cycles start.
 */

export interface ImportGraph {
  /** Absolute file path → the absolute paths of the project files it imports. */
  edges: Map<string, string[]>;
}

const COMPILER_OPTIONS: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  allowImportingTsExtensions: true,
  resolveJsonModule: true,
};

/** Every .ts file under the given folders, skipping node_modules and build output. */
export function listTsFiles(dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(full);
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
  for (const file of known) {
    const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    const targets = new Set<string>();
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
      const target = resolved ? path.resolve(resolved.resolvedFileName) : undefined;
      if (target && known.has(target) && target !== file) targets.add(target);
    }
    edges.set(file, [...targets].sort());
  }
  return { edges };
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
  const cycles = findCycles(buildImportGraph(listTsFiles(LINTED_DIRS.map((d) => path.join(root, d)))));
  if (cycles.length > 0) {
    console.error(describeCycles(cycles, root));
    console.error(`${cycles.length} import cycle(s); npm run lint fails until they are gone.`);
    process.exit(1);
  }
}
