/**
 * Commands run under the agent's uid, so what keeps them from the agent's memory (the gateway key), its
 * environment and its descriptors (the IPC stream) is that the agent and PID 1 (tini, whose stdio is the
 * same stream) are not dumpable: the image makes node and tini execute-only, and the kernel marks a
 * process that runs a binary it cannot read as not dumpable. Such a process's /proc/<pid>/environ (like
 * its mem and fd) belongs to root, which is what is checked here (the /proc/<pid> directory itself keeps
 * the task's uid either way). If either is dumpable (a host with fs.suid_dumpable = 1, an image built
 * some other way), no command runs: the gate alone is not the boundary.
 */
import fs from 'node:fs';

export type IsolationCheck = () => string | null;

export function checkProcessIsolation(
  pids: readonly number[] = [1, process.pid],
  stat: (path: string) => { uid: number } = fs.statSync,
): string | null {
  for (const pid of pids) {
    let owner: number;
    try {
      owner = stat(`/proc/${pid}/environ`).uid;
    } catch (error) {
      return `cannot tell whether process ${pid} is shielded from commands (${(error as Error).message})`;
    }
    if (owner !== 0) {
      return `process ${pid} is dumpable, so commands could read its memory, environment and IPC stream`;
    }
  }
  return null;
}
