/**
 * Where the bash tool's commands run. In the container: the command executor the launcher started under
 * the commands' uid, on the pipes it handed the agent as descriptors 3 (its answers) and 4 (requests).
 * Anywhere else (no such pipes), nothing runs: commands never run as the agent.
 */
import fs from 'node:fs';
import net from 'node:net';
import type { BashRunOptions, BashRunResult } from '../tools/bash-runner.ts';
import { checkSeparation, procFacts, type SeparationFacts } from '../tools/process-isolation.ts';
import { connectCommandExecutor, type CommandExecutor } from './client.ts';

export interface CommandRunner {
  run(options: BashRunOptions): Promise<BashRunResult>;
  /** Null when commands are separated from the agent; otherwise why no command may run. Checked once. */
  separation(): Promise<string | null>;
}

/** The descriptors launch.sh gives the agent. */
const EXECUTOR_REPLIES_FD = 3;
const EXECUTOR_REQUESTS_FD = 4;
/** The executor says who it is as soon as it starts; one that has not by then never will. */
const HELLO_TIMEOUT_MS = 15_000;

export function executorCommands(
  executor: CommandExecutor,
  facts: (commandUid: number) => SeparationFacts,
  wake: () => void = () => undefined,
): CommandRunner {
  let verdict: Promise<string | null> | undefined;
  return {
    run: (options) => executor.run(options),
    separation: () =>
      (verdict ??= new Promise<string | null>((resolve) => {
        wake();
        const timer = setTimeout(
          () => resolve(`the command executor did not start within ${HELLO_TIMEOUT_MS / 1000} s`),
          HELLO_TIMEOUT_MS,
        );
        timer.unref();
        executor.identity.then(
          ({ uid }) => resolve(checkSeparation(facts(uid))),
          (error: Error) => resolve(error.message),
        );
      })),
  };
}

/** A runner that runs nothing, saying why. */
export function noCommands(why: string): CommandRunner {
  return {
    run: () => Promise.reject(new Error(why)),
    separation: () => Promise.resolve(why),
  };
}

/**
 * The executor on the launcher's pipes, or a runner that refuses when the agent was started without them.
 * `sessionDir` is the folder the separation check requires to be the agent's alone.
 */
export function launcherCommands(sessionDir: string): CommandRunner {
  const isPipe = (fd: number) => {
    try {
      return fs.fstatSync(fd).isFIFO();
    } catch {
      return false;
    }
  };
  if (!isPipe(EXECUTOR_REPLIES_FD) || !isPipe(EXECUTOR_REQUESTS_FD))
    return noCommands('there is no command executor: the agent was not started by the launcher');
  const input = new net.Socket({ fd: EXECUTOR_REPLIES_FD, readable: true, writable: false });
  const output = new net.Socket({ fd: EXECUTOR_REQUESTS_FD, readable: false, writable: true });
  // Neither keeps the agent alive: it exits when the host is gone, whatever the executor does.
  input.unref();
  output.unref();
  // launch.sh starts the executor's node at the first line it gets: at the separation check, which the run
  // asks for once its first LLM request is out, or the first command if that comes sooner. A pre-started
  // container waits without it (a node process fewer in memory while it waits).
  let awake = false;
  const wake = () => {
    if (awake) return;
    awake = true;
    output.write('start\n');
  };
  return executorCommands(
    connectCommandExecutor({ input, output }),
    (commandUid) => procFacts(commandUid, sessionDir),
    wake,
  );
}
