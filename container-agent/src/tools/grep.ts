import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import type { Workspace } from '../workspace/confine.ts';
import { matchesGlob } from './glob.ts';
import { SKIPPED_DIRS } from './list-files.ts';
import { ToolError, defineTool, type AgentTool } from './tool.ts';
import { errorMessage } from '../rpc/errors.ts';

const DEFAULT_MAX_RESULTS = 200;
const MAX_LINE_CHARS = 500;
/** The JavaScript fallback skips larger files and tests at most this much of each line (regex cost). */
const FALLBACK_MAX_FILE_BYTES = 2 * 1024 * 1024;
const FALLBACK_MAX_FILES = 20_000;

const grepArgs = z
  .object({
    pattern: z.string().min(1).max(1000).describe('Regular expression to search for.'),
    path: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe('File or folder to search (default: the group folder).'),
    glob: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('Only search files matching this glob, e.g. "*.md".'),
    ignore_case: z.boolean().optional(),
    max_results: z.number().int().min(1).max(1000).optional().describe(`Default ${DEFAULT_MAX_RESULTS}.`),
  })
  .strict();
type GrepArgs = z.output<typeof grepArgs>;

export interface GrepToolOptions {
  workspace: Workspace;
  /** Path of the ripgrep binary, or null to use the JavaScript search. */
  ripgrep: () => Promise<string | null>;
}

export function createGrepTool(options: GrepToolOptions): AgentTool {
  const { workspace } = options;
  return defineTool({
    name: 'grep',
    description: 'Search workspace files for a regular expression; prints path:line:text.',
    schema: grepArgs,
    async run(args, context) {
      const target = await workspace.resolve(args.path ?? '.');
      const max = args.max_results ?? DEFAULT_MAX_RESULTS;
      const rg = await options.ripgrep();
      const hits = rg
        ? await searchWithRipgrep(rg, target, args, max, context.signal)
        : await searchInJs(target, args, max);
      if (hits.length === 0) return 'No matches.';
      const lines = hits
        .slice(0, max)
        .map((hit) => `${workspace.display(hit.file)}:${hit.line}:${clip(hit.text)}`);
      if (hits.length > max) lines.push(`[stopped after ${max} matches]`);
      return lines.join('\n');
    },
  });
}

/** Finds ripgrep once per process; null when it is not installed. */
export function createRipgrepLocator(): () => Promise<string | null> {
  let found: Promise<string | null> | undefined;
  return () => {
    found ??= new Promise((resolve) => {
      const child = spawn('rg', ['--version'], { stdio: 'ignore' });
      child.on('error', () => resolve(null));
      child.on('exit', (code) => resolve(code === 0 ? 'rg' : null));
    });
    return found;
  };
}

interface Hit {
  file: string;
  line: number;
  text: string;
}

function clip(text: string): string {
  return text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS)}…` : text;
}

function searchWithRipgrep(
  rg: string,
  target: string,
  args: GrepArgs,
  max: number,
  signal: AbortSignal,
): Promise<Hit[]> {
  const rgArgs = ['--json', '--max-columns', String(MAX_LINE_CHARS * 2), '--max-filesize', '10M'];
  if (args.ignore_case) rgArgs.push('--ignore-case');
  if (args.glob) rgArgs.push('--glob', args.glob);
  rgArgs.push('--regexp', args.pattern, '--', target);
  return new Promise((resolve, reject) => {
    const child = spawn(rg, rgArgs, { stdio: ['ignore', 'pipe', 'pipe'], signal });
    const hits: Hit[] = [];
    let pending = '';
    let stderr = '';
    const onLine = (line: string): void => {
      if (hits.length > max) return;
      try {
        const event = JSON.parse(line) as {
          type: string;
          data?: { path?: { text?: string }; line_number?: number; lines?: { text?: string } };
        };
        if (event.type !== 'match' || !event.data?.path?.text) return;
        hits.push({
          file: event.data.path.text,
          line: event.data.line_number ?? 0,
          text: (event.data.lines?.text ?? '').replace(/\r?\n$/, ''),
        });
        if (hits.length > max) child.kill();
      } catch {
        // Non-UTF-8 paths come as bytes; skipping them is fine.
      }
    };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf('\n')) !== -1) {
        onLine(pending.slice(0, newline));
        pending = pending.slice(newline + 1);
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-2000)));
    child.on('error', reject);
    child.on('close', (code) => {
      // 0 = matches, 1 = none; 2 = an error (a bad pattern, or unreadable files next to results).
      if (code === 2 && hits.length === 0)
        reject(new ToolError(`grep failed: ${stderr.trim() || 'ripgrep exited with an error'}`));
      else resolve(hits);
    });
  });
}

async function searchInJs(target: string, args: GrepArgs, max: number): Promise<Hit[]> {
  let regex: RegExp;
  try {
    regex = new RegExp(args.pattern, args.ignore_case ? 'i' : '');
  } catch (error) {
    throw new ToolError(`invalid regular expression: ${errorMessage(error)}`);
  }
  const hits: Hit[] = [];
  const rootStat = await fs.stat(target);
  const files: string[] = [];
  if (rootStat.isFile()) files.push(target);
  else await collectFiles(target, '', args.glob, files);
  for (const file of files) {
    if (hits.length > max) break;
    let buffer: Buffer;
    try {
      const stat = await fs.lstat(file);
      if (!stat.isFile() || stat.size > FALLBACK_MAX_FILE_BYTES) continue;
      buffer = await fs.readFile(file);
    } catch {
      continue;
    }
    if (buffer.subarray(0, 8192).includes(0)) continue;
    const lines = buffer.toString('utf8').split('\n');
    for (let i = 0; i < lines.length && hits.length <= max; i++) {
      const line = (lines[i] as string).slice(0, MAX_LINE_CHARS * 4);
      if (regex.test(line)) hits.push({ file, line: i + 1, text: line.replace(/\r$/, '') });
    }
  }
  return hits;
}

/** Walks without following symlinks, so the search cannot leave the folder it was given. */
async function collectFiles(
  dir: string,
  relative: string,
  glob: string | undefined,
  out: string[],
): Promise<void> {
  if (out.length >= FALLBACK_MAX_FILES) return;
  let entries;
  try {
    entries = await fs.readdir(path.join(dir, relative), { withFileTypes: true });
  } catch {
    return;
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    const rel = relative ? `${relative}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRS.has(entry.name)) await collectFiles(dir, rel, glob, out);
    } else if (entry.isFile() && (!glob || matchesGlob(rel, glob))) {
      out.push(path.join(dir, rel));
      if (out.length >= FALLBACK_MAX_FILES) return;
    }
  }
}
