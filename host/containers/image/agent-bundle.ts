import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtinModules } from 'node:module';
import { build, stop, transform, type Plugin } from 'esbuild';

/** WebAssembly files the agent's bash parser loads at run time, shipped next to the bundle. */
export const AGENT_WASM_ASSETS = [
  { packageName: 'web-tree-sitter', file: 'tree-sitter.wasm' },
  { packageName: 'tree-sitter-bash', file: 'tree-sitter-bash.wasm' },
] as const;

export interface BundleAgentOptions {
  /** The agent's entry module (TypeScript or JavaScript). */
  entry: string;
  /** The container's entry, a CommonJS file (`….cjs`); the agent's chunks and wasm assets land next to it. */
  outFile: string;
  /**
   * Directory esbuild works from and whose node_modules provide the wasm assets.
   * Default: the nearest directory above the entry that holds a package.json.
   */
  projectRoot?: string;
}

export interface AgentChunk {
  /** Absolute path of the chunk (`agent-….cjs`). */
  file: string;
  /** Absolute path its V8 code cache is written to (writeAgentCodeCache); named by the chunk's hash. */
  cacheFile: string;
}

export interface AgentBundle {
  outFile: string;
  /** sha256 over every file of the bundle (names and contents), hex. */
  sha256: string;
  /** Absolute paths of the files that make up the bundle: the entry first, the chunks, then the assets. */
  files: string[];
  /** The agent's chunks; the first is the one the entry runs. */
  chunks: AgentChunk[];
}

export function defaultAgentPaths(projectRoot: string): { entry: string; outFile: string } {
  return {
    entry: path.join(projectRoot, 'container-agent', 'src', 'main.ts'),
    outFile: path.join(projectRoot, 'container-agent', 'dist', 'agent.cjs'),
  };
}

/**
 * Node's flags for the agent: the images' ENTRYPOINT has them (a test holds both equal), and its code cache
 * is written under them, since V8 takes a cache only under the flags it was made with.
 */
export const AGENT_NODE_FLAGS = ['--min-semi-space-size=16'] as const;

/** The chunk that runs the agent's entry module; the others are named by esbuild (name and content hash). */
export const AGENT_MAIN_CHUNK = 'agent-main.cjs';

/** The container's entry, which loads the agent's chunks through their code caches (container-agent/src/boot.ts). */
const BOOT_ENTRY = path.join('container-agent', 'src', 'boot.ts');
/** The command executor, a script of its own next to the agent's entry (DESIGN.md, "Bash gate"). */
const EXECUTOR_ENTRY = path.join('container-agent', 'src', 'executor', 'main.ts');
export const EXECUTOR_FILE = 'executor.cjs';
/** PID 1 of the container: starts the executor and the agent under their own uids (container-agent/launch.sh). */
const LAUNCHER = path.join('container-agent', 'launch.sh');
export const LAUNCHER_FILE = 'launch.sh';

/** What the agent's chunks are named: the entry's own, and those esbuild splits off. */
const CHUNK_FILE = /^agent-[\w-]+\.cjs$/;
/** How esbuild's output imports a chunk with import(). */
const CHUNK_IMPORT = /\bimport\("\.\/(agent-[\w-]+\.cjs)"\)/g;
/** What such an import becomes in a CommonJS chunk. */
const CHUNK_IMPORT_FUNCTION = '__carapaceImportChunk';

/**
 * Bundles the agent for Node 20+: the agent as CommonJS chunks (`agent-main.cjs` runs the entry module; a
 * module it imports with `import()` and what only that module needs load as their own chunk when it is
 * called; what both need is one shared chunk), the entry that loads them at `outFile`, and the wasm
 * assets, all in one directory. The code caches are written separately, when an image is built
 * (writeAgentCodeCache). Builds run from the package root that holds the entry so that the output (which
 * embeds relative paths in comments) and therefore the image tag do not depend on the caller's cwd.
 */
export async function bundleAgent(options: BundleAgentOptions): Promise<AgentBundle> {
  const entry = path.resolve(options.entry);
  const outFile = path.resolve(options.outFile);
  if (!fs.existsSync(entry)) {
    throw new Error(`Agent entry ${entry} does not exist: write it or pass another entry to bundleAgent.`);
  }
  if (!outFile.endsWith('.cjs')) {
    throw new Error(
      `The agent's entry ${outFile} must be a .cjs file: node starts it as CommonJS, without its ES module loader.`,
    );
  }
  const packageRoot = options.projectRoot
    ? path.resolve(options.projectRoot)
    : findPackageRoot(path.dirname(entry));
  const outDir = path.dirname(outFile);
  fs.mkdirSync(outDir, { recursive: true });
  // Chunks and caches of an earlier build would pile up: their names change with their content.
  for (const name of fs.readdirSync(outDir)) {
    if (CHUNK_FILE.test(name) || name.endsWith('.cache')) fs.rmSync(path.join(outDir, name), { force: true });
  }

  const common = {
    bundle: true,
    platform: 'node',
    target: 'node20',
    logLevel: 'silent',
    legalComments: 'none',
    absWorkingDir: packageRoot,
    // A third less source for node to read at every container start; names are kept for stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
  } as const;
  // esbuild splits chunks only for ES modules; each chunk is then turned into CommonJS on its own, which
  // keeps chunk-to-chunk imports as require('./agent-….cjs') for the entry's loader to resolve.
  const split = await build({
    ...common,
    entryPoints: { [path.basename(AGENT_MAIN_CHUNK, '.cjs')]: entry },
    outdir: outDir,
    format: 'esm',
    splitting: true,
    write: false,
    chunkNames: 'agent-[name]-[hash]',
    outExtension: { '.js': '.cjs' },
    // The agent finds its wasm files next to its chunks; a CommonJS chunk has no import.meta.
    define: { 'import.meta.url': '__carapaceScriptUrl' },
    plugins: [dynamicBuiltinsAsRequire],
  });
  const cacheNames: Record<string, string> = {};
  const chunks: AgentChunk[] = [];
  for (const output of split.outputFiles) {
    const name = path.basename(output.path);
    if (!CHUNK_FILE.test(name))
      throw new Error(`esbuild wrote an unexpected agent chunk ${name}; expected names like agent-main.cjs`);
    // import('../agent-….cjs') becomes a call the entry's loader serves: a script compiled from a code cache
    // cannot run a real dynamic import (see dynamicBuiltinsAsRequire). Not a require in place: the bash
    // parser declares its own `var require` in the function that imports "module".
    const esm = output.text.replace(
      CHUNK_IMPORT,
      (_, chunk: string) => `${CHUNK_IMPORT_FUNCTION}("./${chunk}")`,
    );
    const banner = [
      ...(esm.includes(CHUNK_IMPORT_FUNCTION)
        ? [`const ${CHUNK_IMPORT_FUNCTION} = (chunk) => Promise.resolve().then(() => require(chunk));`]
        : []),
      ...(esm.includes('__carapaceScriptUrl')
        ? ["const __carapaceScriptUrl = require('node:url').pathToFileURL(__filename).href;"]
        : []),
    ].join('\n');
    const cjs = await transform(esm, {
      format: 'cjs',
      platform: 'node',
      target: 'node20',
      minifyWhitespace: true,
      minifySyntax: true,
      ...(banner ? { banner } : {}),
    });
    fs.writeFileSync(output.path, cjs.code);
    // V8 checks only a cache's length against its source: the name binds a cache to its chunk's bytes.
    cacheNames[name] = `${name}.${hashFiles([output.path]).slice(0, 16)}.cache`;
    const chunk = { file: output.path, cacheFile: path.join(outDir, cacheNames[name]) };
    if (name === AGENT_MAIN_CHUNK) chunks.unshift(chunk);
    else chunks.push(chunk);
  }
  await build({
    ...common,
    entryPoints: [path.join(bootRoot(packageRoot), BOOT_ENTRY)],
    outfile: outFile,
    format: 'cjs',
    define: {
      __CARAPACE_AGENT_CHUNKS__: JSON.stringify(cacheNames),
      __CARAPACE_AGENT_MAIN__: JSON.stringify(AGENT_MAIN_CHUNK),
    },
  });

  const executorFile = path.join(outDir, EXECUTOR_FILE);
  await build({
    ...common,
    entryPoints: [path.join(bootRoot(packageRoot), EXECUTOR_ENTRY)],
    outfile: executorFile,
    format: 'cjs',
  });
  const launcherFile = path.join(outDir, LAUNCHER_FILE);
  fs.copyFileSync(path.join(bootRoot(packageRoot), LAUNCHER), launcherFile);

  const files = [outFile, ...chunks.map((c) => c.file), executorFile, launcherFile];
  for (const asset of AGENT_WASM_ASSETS) {
    const source = findPackageFile(packageRoot, asset.packageName, asset.file);
    const target = path.join(outDir, asset.file);
    fs.copyFileSync(source, target);
    files.push(target);
  }
  return { outFile, sha256: hashFiles(files), files, chunks };
}

/**
 * Ends esbuild's helper process. esbuild keeps one running after its first call, for the next; a host
 * bundles once at start and would keep it for its whole life. A later bundle starts a new one.
 */
export function stopBundler(): Promise<void> {
  return stop();
}

/**
 * Writes the V8 code caches of the agent's chunks next to them by booting the agent once with this host's
 * node (up to "agent ready", then loading every other chunk, with a placeholder gateway address; nothing
 * is contacted) and returns their files, or throws saying why. A cache differs from build to build (V8
 * does not write it byte for byte the same), so caches stay out of the bundle's hash: they are derived
 * from the bundle, and an image built without them (or with ones another node rejects) only starts slower.
 */
export function writeAgentCodeCache(bundle: AgentBundle): string[] {
  const cacheFiles = bundle.chunks.map((c) => c.cacheFile);
  for (const file of cacheFiles) fs.rmSync(file, { force: true });
  // Exactly the container's command line, no inherited NODE_OPTIONS: V8 takes a cache only under the flags
  // it was made with.
  const result = spawnSync(process.execPath, [...AGENT_NODE_FLAGS, bundle.outFile], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      CARAPACE_WRITE_CODE_CACHE: '1',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 30_000,
  });
  const missing = cacheFiles.filter((f) => !fs.existsSync(f));
  if (result.status !== 0 || missing.length > 0)
    throw new Error(
      `booting the agent to write its code cache failed (exit ${result.status ?? result.signal}${missing.length > 0 ? `, missing ${missing.map((f) => path.basename(f)).join(', ')}` : ''}): ${result.stderr.toString('utf8').slice(-500)}`,
    );
  return cacheFiles;
}

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/**
 * `import("fs/promises")` of a node module (the bash parser has three) becomes a module that re-exports it: a
 * script compiled from a code cache loses what node needs to run a dynamic import ("A dynamic import
 * callback was not specified"), and node's own loader for vm scripts is experimental on Node 20. Lowering
 * the import in place would not do: the parser's `var require = createRequire(…)` shadows the chunk's
 * require where it imports "module". Each such module is a tiny chunk of its own.
 */
const dynamicBuiltinsAsRequire: Plugin = {
  name: 'dynamic-builtins-as-require',
  setup(b) {
    b.onResolve({ filter: /^[a-z:/_]+$/ }, (args) =>
      args.kind === 'dynamic-import' && BUILTINS.has(args.path)
        ? { path: args.path, namespace: 'dynamic-builtin' }
        : undefined,
    );
    // An ES module that re-exports it, not `module.exports = require(…)`: esbuild's chunk of a CommonJS
    // module exports only `default`, where the importer destructures named exports.
    b.onLoad({ filter: /.*/, namespace: 'dynamic-builtin' }, (args) => ({
      contents: `export * from ${JSON.stringify(args.path)};\nexport { default } from ${JSON.stringify(args.path)};`,
      loader: 'js',
    }));
  },
};

/**
 * Where container-agent/src/boot.ts is: the project's, also when another entry is bundled. Found by
 * walking up from this module, which runs from `host/containers/image/` or from a chunk in `dist/cli/`.
 */
function bootRoot(packageRoot: string): string {
  if (fs.existsSync(path.join(packageRoot, BOOT_ENTRY))) return packageRoot;
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, BOOT_ENTRY))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`cannot find ${BOOT_ENTRY} above ${packageRoot}`);
  }
}

/** Hashes file names and contents in a fixed order, so moving the output dir keeps the hash. */
export function hashFiles(files: readonly string[]): string {
  const hash = createHash('sha256');
  for (const file of [...files].sort((a, b) => path.basename(a).localeCompare(path.basename(b)))) {
    const content = fs.readFileSync(file);
    hash.update(`${path.basename(file)}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest('hex');
}

function findPackageRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return start;
    dir = parent;
  }
}

function findPackageFile(fromDir: string, packageName: string, file: string): string {
  let dir = fromDir;
  for (;;) {
    const candidate = path.join(dir, 'node_modules', packageName, file);
    if (fs.existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) {
      throw new Error(
        `Cannot find ${packageName}/${file} in any node_modules above ${fromDir}: the agent needs it at run time. ` +
          `Install the project's dependencies (npm ci) and try again.`,
      );
    }
    dir = parent;
  }
}
