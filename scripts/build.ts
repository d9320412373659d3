/**
 * `npm run build` (run by `npm install` and `npm start`): the shipped CLI and host as JavaScript in
 * dist/cli/, so `carapace` starts without a TypeScript loader. esbuild, not tsc, because start-up is what
 * this build is for: every command is its own chunk (the table in host/cli/main.ts imports them lazily),
 * and zod, which a client command needs to check the host's answers, is bundled into one chunk instead
 * of ~100 files for Node's ESM loader to open and compile one by one. Packages with native code, wasm or
 * files of their own stay in node_modules. Type checking is `npm run typecheck`'s job.
 *
 * Every chunk lands in one folder, so code that finds files beside itself (the SQL migrations) finds
 * them wherever esbuild put it. The tests' global setup builds through `buildCli` too, so the CLI the
 * suites spawn is the one users run and never older than the sources.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT_DIR = path.join(ROOT, 'dist', 'cli');
/** Pure JavaScript that loads in many small files; everything else is left to node_modules. */
const BUNDLED = new Set(['zod', 'smol-toml']);

const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies }).filter((n) => !BUNDLED.has(n));

/**
 * zod's index re-exports ~50 locales as a namespace, which no bundler can drop; the host's messages are
 * English only, so the bundle keeps `en` (the default zod installs itself) and nothing else.
 */
const englishOnlyZod: esbuild.Plugin = {
  name: 'zod-english-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";',
      resolveDir: path.dirname(args.path),
    }));
  },
};

/**
 * Builds the CLI into a fresh folder beside `outDir` and then puts it in place, so a `carapace` started
 * meanwhile (a host under test, another run of the suite) finds the old build or the new one, never half
 * of one.
 */
export async function buildCli(outDir = OUT_DIR): Promise<void> {
  const fresh = `${outDir}.new-${process.pid}`;
  const old = `${outDir}.old-${process.pid}`;
  fs.rmSync(fresh, { recursive: true, force: true });
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { main: 'host/cli/main.ts' },
    outdir: fresh,
    chunkNames: '[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22.14',
    external,
    plugins: [englishOnlyZod],
    logLevel: 'warning',
  });
  fs.cpSync(path.join(ROOT, 'host', 'store', 'migrations'), path.join(fresh, 'migrations'), {
    recursive: true,
  });
  // Two renames: for the instant between them there is no build, and bin/carapace.js runs the sources.
  fs.rmSync(old, { recursive: true, force: true });
  if (fs.existsSync(outDir)) fs.renameSync(outDir, old);
  fs.renameSync(fresh, outDir);
  fs.rmSync(old, { recursive: true, force: true });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await buildCli();
