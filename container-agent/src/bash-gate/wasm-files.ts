/**
 * Finds the two wasm files the bash parser needs. In the container they sit next to the bundled agent
 * (the bundler copies them there); on the host, and when the agent runs from source, they come from
 * node_modules, next to the packages that ship them.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

import type { BashGateWasm } from './parser-loader.ts';

/** The wasm files as paths on disk (the parser also takes bytes; these are files). */
export type WasmFilePaths = { [K in keyof BashGateWasm]: string };

const FILES = {
  treeSitterWasm: { file: 'tree-sitter.wasm', specifier: 'web-tree-sitter/tree-sitter.wasm' },
  bashLanguageWasm: { file: 'tree-sitter-bash.wasm', specifier: 'tree-sitter-bash/tree-sitter-bash.wasm' },
} as const;

/** `scriptUrl` is the running module's import.meta.url; `explicitDir` wins when given. */
export function locateWasmFiles(options: { scriptUrl: string; explicitDir?: string }): WasmFilePaths {
  const scriptDir = path.dirname(new URL(options.scriptUrl).pathname);
  const requireFromScript = createRequire(options.scriptUrl);
  const find = (key: keyof typeof FILES): string => {
    const { file, specifier } = FILES[key];
    const dirs = options.explicitDir ? [options.explicitDir] : [scriptDir];
    for (const dir of dirs) {
      const candidate = path.join(dir, file);
      if (fs.existsSync(candidate)) return candidate;
    }
    if (!options.explicitDir) {
      try {
        return requireFromScript.resolve(specifier);
      } catch {
        // Reported below.
      }
    }
    throw new Error(
      `cannot find ${file} in ${dirs.join(', ')} or node_modules; set CARAPACE_WASM_DIR to the folder holding it`,
    );
  };
  return { treeSitterWasm: find('treeSitterWasm'), bashLanguageWasm: find('bashLanguageWasm') };
}

/** The host's copy: node_modules beside this module (the host never ships the files next to itself). */
export function resolveBashGateWasmPaths(): WasmFilePaths {
  return locateWasmFiles({ scriptUrl: import.meta.url });
}
