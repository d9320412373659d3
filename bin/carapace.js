#!/usr/bin/env node
// Entry point of the `carapace` CLI. It runs the compiled JavaScript in dist/ (built by `npm install`
// and again by `npm start`); a checkout that was never built, or CARAPACE_FROM_SOURCE=1, runs
// the TypeScript sources through tsx instead.
import { existsSync } from 'node:fs';
import { nodeVersionProblem } from '../host/cli/node-support.js';

// Before anything else loads: on a Node older than engines.node the database driver crashes the process
// without a word, so say what is missing instead.
const tooOld = nodeVersionProblem(new URL('../package.json', import.meta.url));
if (tooOld) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(1);
}

// `carapace status | head` closes the pipe early: that is the reader's choice, not an error to report.
// A terminal that closed under `carapace start --no-console &` (EIO) must not end the host either: its log
// goes to a file, and what it still prints for the terminal has nobody left to read it.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    if (err.code === 'EIO') return;
    throw err;
  });
}

const compiled = new URL('../dist/cli/main.js', import.meta.url);
let main;
if (process.env.CARAPACE_FROM_SOURCE !== '1' && existsSync(compiled)) {
  ({ main } = await import(compiled.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../host/cli/main.ts'));
}
process.exitCode = await main(process.argv.slice(2));
