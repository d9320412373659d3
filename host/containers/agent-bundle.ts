import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { build } from 'esbuild';

/** WebAssembly files the agent's bash parser loads at run time, shipped next to the bundle. */
export const AGENT_WASM_ASSETS = [
  { packageName: 'web-tree-sitter', file: 'tree-sitter.wasm' },
  { packageName: 'tree-sitter-bash', file: 'tree-sitter-bash.wasm' },
] as const;

export interface BundleAgentOptions {
  /** The agent's entry module (TypeScript or JavaScript). */
  entry: string;
  /** Where the single-file ESM bundle is written; the wasm assets land in the same directory. */
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
  /** Absolute paths of the files that make up the bundle: the script first, then the assets. */
  files: string[];
}

export function defaultAgentPaths(projectRoot: string): { entry: string; outFile: string } {
  return {
    entry: path.join(projectRoot, 'container-agent', 'src', 'main.ts'),
    outFile: path.join(projectRoot, 'container-agent', 'dist', 'agent.mjs'),
  };
}

/**
 * Bundles the agent into one ESM file for Node 20+ and copies the wasm assets next to it.
 * Builds run from the package root that holds the entry so that the output (which embeds
 * relative paths in comments) and therefore the image tag do not depend on the caller's cwd.
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

  await build({
    entryPoints: [entry],
    outfile: outFile,
    absWorkingDir: packageRoot,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'silent',
    legalComments: 'none',
    // A third less source for node to parse at every container start; names are kept for stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    // CommonJS dependencies call require() on Node built-ins; an ESM bundle has no require
    // unless we give it one.
    banner: {
      js: "import { createRequire as __carapaceCreateRequire } from 'node:module';\nconst require = __carapaceCreateRequire(import.meta.url);",
    },
  });

  const files = [outFile];
  for (const asset of AGENT_WASM_ASSETS) {
    const source = findPackageFile(packageRoot, asset.packageName, asset.file);
    const target = path.join(outDir, asset.file);
    fs.copyFileSync(source, target);
    files.push(target);
  }
  return { outFile, sha256: hashFiles(files), files };
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
