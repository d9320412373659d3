/**
 * The container's entry (`node /app/agent.mjs`). It runs the agent bundle (agent.cjs, next to it) through
 * the V8 code cache written when the image was built, so node neither parses nor compiles a megabyte of
 * JavaScript at every container start. Node 20 has no compile cache of its own (module.enableCompileCache
 * is Node 22.1+), and ES modules take no cached data, hence a CommonJS bundle compiled here with vm.Script.
 *
 * V8 checks a cache's version and flags, and rejects it when they differ (another node in the image): the
 * bundle then compiles as without a cache. V8 does not check that the cache belongs to this source (only its
 * length), so the cache's file name carries the bundle's hash, fixed when both were built.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

/** The bundle's sha256 (hex, first 16), set by the bundler. */
declare const __CARAPACE_AGENT_HASH__: string;

/** Set only when the host writes the cache while building the image: where to write it. */
const WRITE_CACHE_ENV = 'CARAPACE_WRITE_CODE_CACHE';

const dir = path.dirname(fileURLToPath(import.meta.url));
const file = path.join(dir, 'agent.cjs');
const cacheFile = path.join(dir, `agent.cjs.${__CARAPACE_AGENT_HASH__}.cache`);
const writeTo = process.env[WRITE_CACHE_ENV];
delete process.env[WRITE_CACHE_ENV];

let cachedData: Buffer | undefined;
if (!writeTo) {
  try {
    cachedData = fs.readFileSync(cacheFile);
  } catch {
    // No cache (an image built without one): compile as usual.
  }
}
// esbuild writes ASCII only (it escapes the rest), so latin1 reads the same text without decoding UTF-8.
const source = fs.readFileSync(file, 'latin1');
const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
  filename: file,
  ...(cachedData ? { cachedData } : {}),
});
if (cachedData && script.cachedDataRejected) {
  process.stderr.write(
    JSON.stringify({
      level: 'warn',
      time: new Date().toISOString(),
      msg: `the agent's code cache does not fit node ${process.version}; compiled without it`,
    }) + '\n',
  );
}
const run = script.runInThisContext() as (
  exports: object,
  require: NodeJS.Require,
  module: { exports: object },
  filename: string,
  dirname: string,
) => void;
const agentModule = { exports: {} };
// The agent boots synchronously up to "agent ready"; everything it compiled so far goes into the cache.
run(agentModule.exports, createRequire(file), agentModule, file, dir);
if (writeTo) {
  fs.writeFileSync(writeTo, script.createCachedData());
  process.exit(0);
}
