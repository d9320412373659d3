/**
 * The bash gate: `local` only if every simple command anywhere in the input is on the allowlist with
 * arguments that cannot run another program or reach the network; `escalate` for everything else,
 * including input the parser or the walk does not fully understand.
 *
 * Soundness assumes what the agent's bash tool does: each command runs in a fresh `bash -c` (no aliases,
 * functions or variables carried over), with an environment that holds no BASH_ENV, ENV, SHELLOPTS,
 * exported functions or writable directories in PATH.
 */
import { createDefaultCommandRules } from './command-rules.ts';
import type { CommandRuleTable } from './command-rules.ts';
import { loadBashParser } from './parser-loader.ts';
import type { BashGateWasm, BashParser } from './parser-loader.ts';
import { convertTree } from './syntax-tree.ts';
import { findWordSplitMismatch } from './token-checks.ts';
import { LOCAL_REASON, verdictFromFindings } from './verdict.ts';
import type { BashClassifier, GateVerdict } from './verdict.ts';
import { createWalkContext, walkStatement } from './walker.ts';
import { errorMessage } from '../rpc/errors.ts';

export interface BashClassifierOptions {
  /** Longer commands escalate unparsed. Default: 64 KiB, the IPC limit for a command. */
  maxCommandLength?: number;
  /** Deeper nesting escalates. Default 200. */
  maxDepth?: number;
  /** The allowlist; default `createDefaultCommandRules()`. */
  rules?: CommandRuleTable;
}

const DEFAULT_MAX_LENGTH = 64 * 1024;
const DEFAULT_MAX_DEPTH = 200;

/** Control characters other than tab and newline: bash and tree-sitter split words differently on them. */
function hasControlCharacters(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a) || code === 0x7f) return true;
  }
  return false;
}
const PROC_PATH_RE = /(?:^|[^\w.-])\/?proc(?:\/|$|[\s'";|&)<>])/;
const SOCKET_PATH_RE = /\/dev\/+(?:tcp|udp)\//;

function escalate(reason: string): GateVerdict {
  return { class: 'escalate', reason, network: true };
}

export function createBashClassifierWithParser(
  parser: BashParser,
  options: BashClassifierOptions = {},
): BashClassifier {
  const maxLength = options.maxCommandLength ?? DEFAULT_MAX_LENGTH;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const rules = options.rules ?? createDefaultCommandRules();

  const classifyUnsafe = (command: string): GateVerdict => {
    if (typeof command !== 'string') return escalate('the command is not a string');
    if (command.length > maxLength) return escalate(`the command is longer than ${maxLength} characters`);
    if (hasControlCharacters(command)) return escalate('the command contains control characters');
    if (command.trim() === '') return { class: 'local', reason: 'empty command', network: false };
    const tree = parser.parse(command);
    if (tree === null) return escalate('the parser produced no tree');
    let converted;
    try {
      converted = convertTree(tree, maxDepth);
    } finally {
      tree.delete();
    }
    if (converted.hasError) return escalate('parse error');
    if (converted.tooDeep) return escalate(`the command is nested deeper than ${maxDepth} levels`);
    const mismatch = findWordSplitMismatch(command, converted.root);
    if (mismatch !== null) return escalate(mismatch);
    const ctx = createWalkContext(command, rules, converted.root);
    walkStatement(ctx, converted.root);
    // A safety net under the per-word checks: bash opens sockets for these paths in any redirection.
    if (SOCKET_PATH_RE.test(command) && !ctx.findings.some((f) => f.network))
      ctx.findings.push({ reason: 'the command mentions a /dev/tcp or /dev/udp socket path', network: true });
    // The same net for /proc, whose per-process fds include the IPC stream (see isProcPath).
    if (PROC_PATH_RE.test(command) && ctx.findings.length === 0)
      ctx.findings.push({ reason: 'the command mentions a /proc path', network: false });
    const verdict = verdictFromFindings(ctx.findings);
    return verdict.class === 'local' ? { ...verdict, reason: LOCAL_REASON } : verdict;
  };

  return {
    classify(command: string): GateVerdict {
      try {
        return classifyUnsafe(command);
      } catch (error) {
        const detail = errorMessage(error);
        return escalate(`the classifier failed (${detail})`);
      }
    },
  };
}

/**
 * Loads the parser once (async), then `classify()` is synchronous. Give both wasm files as paths or
 * bytes: the container ships them next to the agent bundle, the host resolves them from node_modules
 * (`resolveBashGateWasmPaths()` in wasm-files.ts).
 */
export async function createBashClassifier(
  wasm: BashGateWasm,
  options: BashClassifierOptions = {},
): Promise<BashClassifier> {
  const parser = await loadBashParser(wasm);
  return createBashClassifierWithParser(parser, options);
}
