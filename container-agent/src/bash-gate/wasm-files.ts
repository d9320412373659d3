/**
 * Where the host finds the two wasm files: in node_modules, next to the packages that ship them. The
 * container does not use this; its image carries both files next to the agent bundle.
 */
import { createRequire } from 'node:module';
import type { BashGateWasm } from './parser-loader.ts';

export function resolveBashGateWasmPaths(): {
  treeSitterWasm: string;
  bashLanguageWasm: string;
} & BashGateWasm {
  const require = createRequire(import.meta.url);
  try {
    return {
      treeSitterWasm: require.resolve('web-tree-sitter/tree-sitter.wasm'),
      bashLanguageWasm: require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'),
    };
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    throw new Error(
      `cannot find the bash gate's wasm files (${detail}); install web-tree-sitter and tree-sitter-bash`,
    );
  }
}
