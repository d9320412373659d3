/**
 * `carapace gate classify`: commands on stdin, one per line, and one JSON line out for each, with
 * `class`, `reason` and `network`. With `--json` every input line is a JSON string, so a command may
 * hold newlines; a line that is not one gets a JSON line with an `error` field instead. Empty lines
 * are skipped and produce no output.
 */
import type { BashClassifier } from './verdict.ts';
import { errorMessage } from '../rpc/errors.ts';

export interface GateClassifyOptions {
  json: boolean;
}

export interface GateClassifyError {
  error: string;
  line: number;
}

/** One input line → its output line (without newline), or null for a skipped empty line. */
export function formatGateLine(
  line: string,
  lineNumber: number,
  options: GateClassifyOptions,
  classifier: BashClassifier,
): string | null {
  // Tolerate CRLF input; a carriage return is never part of a command given one per line.
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  if (text.trim() === '') return null;
  let command: string;
  if (options.json) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      const detail = errorMessage(error);
      return JSON.stringify({
        error: `line ${lineNumber} is not valid JSON (${detail}); with --json each line must be a JSON string`,
        line: lineNumber,
      } satisfies GateClassifyError);
    }
    if (typeof parsed !== 'string') {
      return JSON.stringify({
        error: `line ${lineNumber} is JSON but not a string; with --json each line must be a JSON string such as "ls -la"`,
        line: lineNumber,
      } satisfies GateClassifyError);
    }
    command = parsed;
  } else {
    command = text;
  }
  const verdict = classifier.classify(command);
  return JSON.stringify({ class: verdict.class, reason: verdict.reason, network: verdict.network });
}

/** The whole of stdin at once → the whole of stdout (each output line ends with a newline). */
export function runGateClassify(
  input: string,
  options: GateClassifyOptions,
  classifier: BashClassifier,
): string {
  const out: string[] = [];
  const lines = input.split('\n');
  // A final newline does not start another line.
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  lines.forEach((line, index) => {
    const formatted = formatGateLine(line, index + 1, options, classifier);
    if (formatted !== null) out.push(`${formatted}\n`);
  });
  return out.join('');
}

/**
 * Streaming form for the CLI: reads lines as they come (e.g. from `readline`), writes each answer at once.
 * Returns how many lines could not be read as commands, so the CLI can exit 2 on bad input.
 */
export async function streamGateClassify(
  lines: AsyncIterable<string>,
  write: (chunk: string) => void,
  options: GateClassifyOptions,
  classifier: BashClassifier,
): Promise<number> {
  let lineNumber = 0;
  let badLines = 0;
  for await (const line of lines) {
    lineNumber++;
    const formatted = formatGateLine(line, lineNumber, options, classifier);
    if (formatted === null) continue;
    if (formatted.startsWith('{"error":')) badLines++;
    write(`${formatted}\n`);
  }
  return badLines;
}
