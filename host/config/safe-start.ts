import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, type ConfigProblem } from './config-error.ts';
import { hashText, writeFileAtomically } from './config-file-store.ts';
import type { AppliedConfig } from './config-source.ts';
import { checkConfigText } from './load-config.ts';
import { errorMessage } from '../errors/error-message.ts';
import { errorCode } from '../errors/error-code.ts';

/**
 * Safe start: each time the host ran on a config (a start, a reload that passed its health check) that
 * file is kept as the last known good one. A host started on a config.toml that is not valid runs on
 * that copy instead of stopping, so the owner can repair the file from a chat; it says what is wrong.
 */

export const LAST_GOOD_FILE = 'last-good.toml';

/** `<config dir>/config.history/last-good.toml`, next to the backup ring. */
export function lastGoodFile(configFile: string): string {
  return path.join(path.dirname(configFile), 'config.history', LAST_GOOD_FILE);
}

/** Keeps `applied` as the last known good config (0600 in a 0700 folder); no write when it already is. */
export function saveLastGood(configFile: string, applied: Pick<AppliedConfig, 'text'>): void {
  const file = lastGoodFile(configFile);
  try {
    if (fs.readFileSync(file, 'utf8') === applied.text) return;
  } catch {
    // Not there yet.
  }
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileAtomically(file, applied.text);
}

export interface StartConfig {
  applied: AppliedConfig;
  /** Set when config.toml is not valid and the host runs on the last good copy. */
  safeMode?: {
    problems: ConfigProblem[];
    /** The copy it runs on, and when that was saved. */
    lastGoodFile: string;
    savedAt: string;
  };
}

function readIfThere(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * The config a start runs on: config.toml when valid; otherwise the last good copy (when it is valid for
 * this version), with the file's problems. Throws the file's ConfigError when there is no usable copy.
 */
export function loadStartConfig({
  configFile,
  exampleFile,
}: {
  configFile: string;
  exampleFile: string;
}): StartConfig {
  let text: string;
  try {
    text = readIfThere(configFile) ?? '';
  } catch (err) {
    throw new ConfigError([
      { file: configFile, key: '', problem: `cannot read the file: ${errorMessage(err)}` },
    ]);
  }
  const checked = checkConfigText(configFile, text, exampleFile);
  if (checked.ok) return { applied: { config: checked.config, text, hash: hashText(text) } };
  const copyFile = lastGoodFile(configFile);
  const copy = readIfThere(copyFile);
  const fallback = copy === undefined ? undefined : checkConfigText(copyFile, copy, exampleFile);
  if (copy === undefined || !fallback?.ok) throw new ConfigError(checked.problems);
  return {
    applied: { config: fallback.config, text: copy, hash: hashText(copy) },
    safeMode: {
      problems: checked.problems,
      lastGoodFile: copyFile,
      savedAt: fs.statSync(copyFile).mtime.toISOString(),
    },
  };
}

/**
 * The owner's notice of a start in safe mode: which file is broken, what the host runs on instead, each
 * problem, and how to get out of it. `problems` are already formatted (config-error.ts `formatProblem`).
 */
export function safeModeNotice(
  configFile: string,
  safe: Pick<NonNullable<StartConfig['safeMode']>, 'lastGoodFile' | 'savedAt'>,
  problems: readonly string[],
): string {
  return (
    `SAFE MODE: ${configFile} is not valid, so the host started on the last good configuration ` +
    `(${safe.lastGoodFile}, saved ${safe.savedAt}). ${problems.length} problem(s):\n` +
    problems.map((p) => `- ${p}`).join('\n') +
    '\nRepair the file (by hand, carapace config set or rollback): the running host picks it up.'
  );
}
