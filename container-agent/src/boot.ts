/**
 * The container's entry (`node /app/agent.cjs`). It runs the agent's chunks (agent-*.cjs, next to it)
 * through the V8 code cache written when the image was built, so node neither parses nor compiles the
 * agent at every container start. Node 20 has no compile cache of its own (module.enableCompileCache is
 * Node 22.1+), and ES modules take no cached data, hence CommonJS chunks compiled here with vm.Script.
 *
 * The agent comes in chunks so that a container start reads, deserializes and runs only what "agent
 * ready" needs: the main chunk and the chunk it shares with the rest; the run controller's chunk loads when
 * the agent asks for it, once it listens. This entry is CommonJS too: an ES module entry would load node's
 * ES module loader first.
 *
 * V8 checks a cache's version and flags, and rejects it when they differ (another node in the image): the
 * chunk then compiles as without a cache.
 */
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

// Before anything else: SIGUSR1 makes Node open its inspector, through which whoever can reach its port runs
// code in the agent. A listener of our own replaces Node's handler (launch.sh also passes
// --disable-sigusr1 where Node has it). No command can send the signal anyway (another uid): this is the
// second wall, for whatever gets the agent's uid some other way.
process.on('SIGUSR1', () => undefined);

/**
 * Each chunk's file name → its code cache's file name, set by the bundler. The cache's name carries the
 * chunk's hash: V8 checks only a cache's length against its source, and would take a stale one.
 */
declare const __CARAPACE_AGENT_CHUNKS__: Record<string, string>;
/** The chunk that runs the agent (container-agent/src/main.ts), set by the bundler. */
declare const __CARAPACE_AGENT_MAIN__: string;

/** Set only when the host writes the caches while building the image. */
const WRITE_CACHE_ENV = 'CARAPACE_WRITE_CODE_CACHE';

type ChunkFunction = (
  exports: object,
  require: (specifier: string) => unknown,
  module: { exports: object },
  filename: string,
  dirname: string,
) => void;

interface LoadedChunk {
  module: { exports: object };
  script: vm.Script;
}

function warn(msg: string): void {
  process.stderr.write(JSON.stringify({ level: 'warn', time: new Date().toISOString(), msg }) + '\n');
}

/**
 * A `require` for the chunks: another chunk (`./agent-….cjs`, only those the bundler listed) through its
 * code cache, a node built-in through node's own. The agent bundles everything else.
 */
function createChunkLoader(dir: string, chunks: Record<string, string>, useCache: boolean) {
  const loaded = new Map<string, LoadedChunk>();

  function load(name: string): object {
    const have = loaded.get(name);
    if (have) return have.module.exports;
    const cacheName = Object.hasOwn(chunks, name) ? chunks[name] : undefined;
    if (cacheName === undefined) throw new Error(`the agent has no chunk ${name}; rebuild the agent image`);
    const file = path.join(dir, name);
    let cachedData: Buffer | undefined;
    if (useCache) {
      try {
        cachedData = fs.readFileSync(path.join(dir, cacheName));
      } catch {
        // No cache (an image built without one): compile as usual.
      }
    }
    // esbuild writes ASCII only (it escapes the rest), so latin1 reads the same text without decoding UTF-8.
    const source = fs.readFileSync(file, 'latin1');
    const script = new vm.Script(
      `(function (exports, require, module, __filename, __dirname) {${source}\n})`,
      {
        filename: file,
        ...(cachedData ? { cachedData } : {}),
      },
    );
    if (cachedData && script.cachedDataRejected) {
      warn(`the agent's code cache does not fit node ${process.version}; ${name} compiled without it`);
    }
    const module = { exports: {} };
    loaded.set(name, { module, script });
    (script.runInThisContext() as ChunkFunction)(module.exports, requireFor, module, file, dir);
    return module.exports;
  }

  function requireFor(specifier: string): unknown {
    // This entry is CommonJS: its own require serves node's built-ins.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return specifier.startsWith('./') ? load(specifier.slice(2)) : require(specifier);
  }

  return { load, loaded };
}

const chunks = __CARAPACE_AGENT_CHUNKS__;
const writeCache = process.env[WRITE_CACHE_ENV] === '1';
delete process.env[WRITE_CACHE_ENV];
const loader = createChunkLoader(__dirname, chunks, !writeCache);
// The agent boots synchronously up to "agent ready".
loader.load(__CARAPACE_AGENT_MAIN__);
if (writeCache) {
  // Every chunk, as far as loading it runs, goes into its cache: the rest loads while the agent listens.
  for (const name of Object.keys(chunks)) loader.load(name);
  for (const [name, { script }] of loader.loaded) {
    fs.writeFileSync(path.join(__dirname, chunks[name] as string), script.createCachedData());
  }
  process.exit(0);
}
