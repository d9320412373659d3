/**
 * Loads web-tree-sitter and the bash grammar from wasm given by the caller: the container bundles both
 * files next to the agent, the host resolves them from node_modules (see wasm-files.ts).
 */
import { readFile } from 'node:fs/promises';
import { Language, Parser } from 'web-tree-sitter';
import type { Tree } from 'web-tree-sitter';
import { errorMessage } from '../rpc/errors.ts';

/** A file path, or the file's bytes. */
export type WasmSource = string | Uint8Array;

export interface BashGateWasm {
  /** web-tree-sitter's runtime (`web-tree-sitter/tree-sitter.wasm`). */
  treeSitterWasm: WasmSource;
  /** The bash grammar (`tree-sitter-bash/tree-sitter-bash.wasm`). */
  bashLanguageWasm: WasmSource;
}

export interface BashParser {
  /** Null only if tree-sitter refuses to produce a tree; the caller must fail closed. */
  parse(source: string): Tree | null;
}

/**
 * web-tree-sitter keeps one wasm runtime per process, and `Parser.init` replaces it, which would leave
 * parsers made before a second call pointing into the old runtime's memory. The init promise is kept on
 * the library's own class (where the state it guards lives), so every classifier shares one runtime.
 */
const INIT_PROMISE = Symbol.for('carapace.bash-gate.tree-sitter-init');

async function bytesOf(source: WasmSource, what: string): Promise<Uint8Array> {
  if (typeof source !== 'string') return source;
  try {
    return new Uint8Array(await readFile(source));
  } catch (error) {
    const detail = errorMessage(error);
    throw new Error(`cannot read ${what} wasm at ${source} (${detail}); pass the file's path or bytes`);
  }
}

function runtimeAlreadyReady(): boolean {
  try {
    new Parser().delete();
    return true;
  } catch {
    return false;
  }
}

function initRuntimeOnce(treeSitterWasm: WasmSource): Promise<void> {
  const holder = Parser as unknown as Record<symbol, Promise<void> | undefined>;
  const existing = holder[INIT_PROMISE];
  if (existing) return existing;
  const pending = (async () => {
    if (runtimeAlreadyReady()) return;
    const wasmBinary = await bytesOf(treeSitterWasm, 'web-tree-sitter runtime');
    await Parser.init({ wasmBinary });
  })();
  holder[INIT_PROMISE] = pending;
  // A failed init must not poison later attempts (e.g. after the caller fixes a path).
  pending.catch(() => {
    if (holder[INIT_PROMISE] === pending) holder[INIT_PROMISE] = undefined;
  });
  return pending;
}

export async function loadBashParser(wasm: BashGateWasm): Promise<BashParser> {
  await initRuntimeOnce(wasm.treeSitterWasm);
  const grammar = await bytesOf(wasm.bashLanguageWasm, 'tree-sitter-bash grammar');
  let language: Language;
  try {
    language = await Language.load(grammar);
  } catch (error) {
    const detail = errorMessage(error);
    throw new Error(
      `cannot load the bash grammar (${detail}); pass tree-sitter-bash.wasm from the tree-sitter-bash package`,
    );
  }
  const parser = new Parser();
  parser.setLanguage(language);
  return { parse: (source) => parser.parse(source) };
}
