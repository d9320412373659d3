import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtinModules } from 'node:module';
import { build, type Plugin } from 'esbuild';

/** WebAssembly files the agent's bash parser loads at run time, shipped next to the bundle. */
export const AGENT_WASM_ASSETS = [
  { packageName: 'web-tree-sitter', file: 'tree-sitter.wasm' },
  { packageName: 'tree-sitter-bash', file: 'tree-sitter-bash.wasm' },
] as const;

export interface BundleAgentOptions {
  /** The agent's entry module (TypeScript or JavaScript). */
  entry: string;
  /** Where the container's entry is written; the agent script and the wasm assets land next to it. */
  outFile: string;
  /**
   * Directory esbuild works from and whose node_modules provide the wasm assets.
   * Default: the nearest directory above the entry that holds a package.json.
   */
  projectRoot?: string;
}

export interface AgentBundle {
  outFile: string;
  /** sha256 over every file of the bundle (names and contents), hex. */
  sha256: string;
  /** Absolute paths of the files that make up the bundle: the entry first, the agent, then the assets. */
  files: string[];
}

export function defaultAgentPaths(projectRoot: string): { entry: string; outFile: string } {
  return {
    entry: path.join(projectRoot, 'container-agent', 'src', 'main.ts'),
    outFile: path.join(projectRoot, 'container-agent', 'dist', 'agent.mjs'),
  };
}

/**
 * Node's flags for the agent: the images' ENTRYPOINT has them (a test holds both equal), and its code cache
 * is written under them, since V8 takes a cache only under the flags it was made with.
 */
export const AGENT_NODE_FLAGS = ['--min-semi-space-size=16'] as const;

/** The agent itself, next to the entry: CommonJS, so the entry can compile it with V8's code cache. */
export const AGENT_SCRIPT = 'agent.cjs';

/** The container's entry, which loads the agent through its code cache (container-agent/src/boot.ts). */
const BOOT_ENTRY = path.join('container-agent', 'src', 'boot.ts');

/**
 * Bundles the agent for Node 20+: the agent as one CommonJS file (agent.cjs), the entry that loads it at
 * `outFile` (ESM), and the wasm assets, all in one directory. The code cache is written separately, when
 * an image is built (writeAgentCodeCache). Builds run from the package root that holds the entry so that
 * the output (which embeds relative paths in comments) and therefore the image tag do not depend on the
 * caller's cwd.
 */
export async function bundleAgent(options: BundleAgentOptions): Promise<AgentBundle> {
  const entry = path.resolve(options.entry);
  const outFile = path.resolve(options.outFile);
  if (!fs.existsSync(entry)) {
    throw new Error(`Agent entry ${entry} does not exist: write it or pass another entry to bundleAgent.`);
  }
  const packageRoot = options.projectRoot
    ? path.resolve(options.projectRoot)
    : findPackageRoot(path.dirname(entry));
  const outDir = path.dirname(outFile);
  fs.mkdirSync(outDir, { recursive: true });
  const agentFile = path.join(outDir, AGENT_SCRIPT);

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
  await build({
    ...common,
    entryPoints: [entry],
    outfile: agentFile,
    format: 'cjs',
    // The agent finds its wasm files next to its script; a CommonJS bundle has no import.meta.
    define: { 'import.meta.url': '__carapaceScriptUrl' },
    plugins: [dynamicBuiltinsAsRequire],
    banner: { js: "const __carapaceScriptUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
  await build({
    ...common,
    entryPoints: [path.join(bootRoot(packageRoot), BOOT_ENTRY)],
    outfile: outFile,
    format: 'esm',
    // The cache file's name carries the bundle's hash: V8 would take a stale cache of the same length.
    define: { __CARAPACE_AGENT_HASH__: JSON.stringify(hashFiles([agentFile]).slice(0, 16)) },
  });

  const files = [outFile, agentFile];
  for (const asset of AGENT_WASM_ASSETS) {
    const source = findPackageFile(packageRoot, asset.packageName, asset.file);
    const target = path.join(outDir, asset.file);
    fs.copyFileSync(source, target);
    files.push(target);
  }
  return { outFile, sha256: hashFiles(files), files };
}

/**
 * Writes the agent's V8 code cache next to the bundle by booting it once with this host's node (up to
 * "agent ready", with a placeholder gateway address; nothing is contacted) and returns the file, or throws
 * saying why. The cache differs from build to build (V8 does not write it byte for byte the same), so it
 * stays out of the bundle's hash: it is derived from the bundle, and an image built without it (or with
 * one another node rejects) only starts slower.
 */
export function writeAgentCodeCache(bundle: AgentBundle): string {
  const agentFile = path.join(path.dirname(bundle.outFile), AGENT_SCRIPT);
  const cacheFile = path.join(
    path.dirname(bundle.outFile),
    `${AGENT_SCRIPT}.${hashFiles([agentFile]).slice(0, 16)}.cache`,
  );
  fs.rmSync(cacheFile, { force: true });
  // Exactly the container's command line, no inherited NODE_OPTIONS: V8 takes a cache only under the flags
  // it was made with.
  const result = spawnSync(process.execPath, [...AGENT_NODE_FLAGS, bundle.outFile], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      CARAPACE_WRITE_CODE_CACHE: cacheFile,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
    timeout: 30_000,
  });
  if (result.status !== 0 || !fs.existsSync(cacheFile))
    throw new Error(
      `booting the agent to write its code cache failed (exit ${result.status ?? result.signal}): ${result.stderr.toString('utf8').slice(-500)}`,
    );
  return cacheFile;
}

const BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/**
 * `import("fs/promises")` of a node module (the bash parser has three) becomes a require in the bundle: a
 * script compiled from a code cache loses what node needs to run a dynamic import ("A dynamic import
 * callback was not specified"), and node's own loader for vm scripts is experimental on Node 20.
 */
const dynamicBuiltinsAsRequire: Plugin = {
  name: 'dynamic-builtins-as-require',
  setup(b) {
    b.onResolve({ filter: /^[a-z:/_]+$/ }, (args) =>
      args.kind === 'dynamic-import' && BUILTINS.has(args.path)
        ? { path: args.path, namespace: 'dynamic-builtin' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'dynamic-builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/** Where container-agent/src/boot.ts is: the project's, also when another entry is bundled. */
function bootRoot(packageRoot: string): string {
  if (fs.existsSync(path.join(packageRoot, BOOT_ENTRY))) return packageRoot;
  return path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
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
