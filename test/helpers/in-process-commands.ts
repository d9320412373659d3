import type { CommandRunner } from '../../container-agent/src/executor/command-runner.ts';
import { runBash } from '../../container-agent/src/tools/bash-runner.ts';

/**
 * Commands run by the test's own process, declared separated: for tests of the bash tool's decisions and
 * output, which do not run in a container (the separation itself is proven through real ones, in
 * test/e2e/security-gate-isolation.test.ts).
 */
export const inProcessCommands: CommandRunner = { run: runBash, separation: () => Promise.resolve(null) };
