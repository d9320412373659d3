import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { Finding, SecretScanner } from './finding.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { describeZodIssues } from '../../../container-agent/src/rpc/zod-issues.ts';

/**
 * `carapace secrets scan`: text on stdin → findings as JSON.
 *
 * - Default: the whole input is one text; the output is one line `{"findings":[…]}`.
 * - `--jsonl`: every input line is `{"text": "…"}` and produces exactly one output line, in order:
 *   `{"findings":[…]}` for a valid line, `{"error":"line N: …"}` for an invalid one (blank lines
 *   included, so output line N always answers input line N). The final newline ends the last line; it
 *   does not start an empty one.
 *
 * Exit codes: 0 nothing found; 1 at least one finding; 2 the input (or at least one line) could not be
 * scanned (invalid JSON, wrong shape, scanner failure; the output then holds `{"error": …}`).
 * 2 wins over 1: a partial scan must never read as a verdict.
 * Errors never quote the input line, which may itself hold the secret (V8's JSON.parse errors quote it).
 */
export type SecretsScanExitCode = 0 | 1 | 2;

export interface SecretsScanResult {
  /** What to write to stdout, newline-terminated (empty for empty `--jsonl` input). */
  output: string;
  exitCode: SecretsScanExitCode;
}

export const secretsScanUsage =
  'carapace secrets scan [--jsonl]  (text on stdin; exit 1 when a secret is found)';

/** Parses the arguments after `secrets scan`; throws (node:util parseArgs) naming a bad option. */
export function parseSecretsScanArgs(args: string[]): { jsonl: boolean } {
  const { values } = parseArgs({
    args,
    options: { jsonl: { type: 'boolean', default: false } },
    strict: true,
    allowPositionals: false,
  });
  return { jsonl: values.jsonl };
}

const jsonlLineSchema = z.object({ text: z.string() }).strict();

type LineOutcome = { findings: Finding[] } | { error: string };

async function scanLine(line: string, lineNumber: number, scanner: SecretScanner): Promise<LineOutcome> {
  if (line.trim() === '') return { error: `line ${lineNumber}: empty line; expected {"text": "…"}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return { error: `line ${lineNumber}: not valid JSON; expected {"text": "…"}` };
  }
  const checked = jsonlLineSchema.safeParse(parsed);
  if (!checked.success) {
    return {
      error: `line ${lineNumber}: expected {"text": "…"} and nothing else (${describeZodIssues(checked.error)})`,
    };
  }
  try {
    return { findings: await scanner.scan(checked.data.text) };
  } catch (err) {
    return { error: `line ${lineNumber}: scan failed: ${errorMessage(err)}` };
  }
}

export async function runSecretsScan(
  input: string,
  opts: { jsonl: boolean },
  scanner: SecretScanner,
): Promise<SecretsScanResult> {
  if (!opts.jsonl) {
    let findings: Finding[];
    try {
      findings = input === '' ? [] : await scanner.scan(input);
    } catch (err) {
      return { output: `${JSON.stringify({ error: `scan failed: ${errorMessage(err)}` })}\n`, exitCode: 2 };
    }
    return { output: `${JSON.stringify({ findings })}\n`, exitCode: findings.length > 0 ? 1 : 0 };
  }
  if (input === '') return { output: '', exitCode: 0 };
  const lines = input.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  let found = false;
  let failed = false;
  const out: string[] = [];
  for (const [index, raw] of lines.entries()) {
    const outcome = await scanLine(raw.endsWith('\r') ? raw.slice(0, -1) : raw, index + 1, scanner);
    if ('error' in outcome) failed = true;
    else if (outcome.findings.length > 0) found = true;
    out.push(JSON.stringify(outcome));
  }
  return { output: `${out.join('\n')}\n`, exitCode: failed ? 2 : found ? 1 : 0 };
}
