// Which Node versions Carapace runs on, read from package.json's `engines.node` so the number lives in one
// place. Plain JavaScript that any Node can parse: bin/carapace.js asks before it loads anything an old Node
// cannot run (better-sqlite3 13 needs Node-API 10 and crashes Node 20 at the first database open, with no message).
import { readFileSync } from 'node:fs';

/**
 * What is missing when `version` (default: this process's) is older than `engines.node` (`>=MAJOR.MINOR`)
 * of the package file given; `undefined` when it qualifies.
 * @param {string | URL} packageFile
 * @param {string} [version]
 * @returns {string | undefined}
 */
export function nodeVersionProblem(packageFile, version = process.versions.node) {
  const range = JSON.parse(readFileSync(packageFile, 'utf8')).engines?.node;
  const minimum = /^>=(\d+)\.(\d+)$/.exec(range ?? '');
  if (!minimum) throw new Error(`engines.node in ${packageFile} is ${range}; expected ">=MAJOR.MINOR"`);
  const [major, minor] = version.split('.').map(Number);
  const [needMajor, needMinor] = [Number(minimum[1]), Number(minimum[2])];
  if (major > needMajor || (major === needMajor && minor >= needMinor)) return undefined;
  return (
    `Carapace needs Node ${needMajor}.${needMinor} or newer (Node 22 or 24 LTS); this is Node ${version} ` +
    `(${process.execPath}). Install Node 24 from nodejs.org, your package manager or \`nvm install 24\`, ` +
    'put it first on PATH, then run `npm ci` and this command again.'
  );
}
