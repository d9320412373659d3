/**
 * Whether commands are kept away from the agent by construction (DESIGN.md, "Bash gate"). Commands run
 * under their own uid, in the command executor the launcher started; the agent and PID 1 run under
 * another uid, with no capability left, so no command can signal them, trace them or open their
 * /proc/<pid> (environ, mem, fd: the gateway key and the IPC stream). As a second wall, the agent and PID 1
 * are not dumpable (the image's node and tini are execute-only, and the kernel marks a process that runs a
 * binary it cannot read as not dumpable: its /proc/<pid>/environ belongs to root).
 *
 * Commands share the agent's gid (so both can write the group folder), so what the agent loads as its own
 * (the conversation in the session folder) must be closed to that group: the session folder belongs to the
 * agent's uid with no group or other bits, or a command could append a turn the next run takes as its own.
 *
 * The agent checks all of it before its first command, and runs no command when any of it fails: the gate
 * alone is not the boundary.
 */
import fs from 'node:fs';

/** The capability sets /proc/<pid>/status lists; each must be empty once the launcher is done. */
const CAPABILITY_SETS = ['CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb'] as const;

export interface SeparationFacts {
  /** The uid the executor said it runs commands as. */
  commandUid: number;
  /** The uid the launcher says it gave the executor (CARAPACE_COMMAND_UID). */
  launcherCommandUid: number | undefined;
  /** /proc/<pid>/status of each process a command must not reach: PID 1 and the agent. */
  status: (pid: number | 'self') => string;
  /** Owner of /proc/<pid>/environ: root while the process is not dumpable. */
  environOwner: (pid: number | 'self') => number;
  /** The session folder as lstat sees it: the agent's alone. */
  sessionFolder: () => { isDirectory: boolean; uid: number; mode: number };
}

export function checkSeparation(facts: SeparationFacts): string | null {
  const { commandUid } = facts;
  if (facts.launcherCommandUid === undefined)
    return 'the agent was not started by the launcher (no CARAPACE_COMMAND_UID)';
  if (commandUid !== facts.launcherCommandUid)
    return `the executor runs as uid ${commandUid}, not the uid ${facts.launcherCommandUid} the launcher gave it`;
  let agentUid: number | undefined;
  for (const pid of [1, 'self'] as const) {
    const name = pid === 1 ? 'PID 1' : 'the agent';
    let status: string;
    try {
      status = facts.status(pid);
    } catch (error) {
      return `cannot read the status of ${name} (${(error as Error).message})`;
    }
    const uids = field(status, 'Uid')?.split(/\s+/).map(Number);
    if (!uids || uids.length !== 4 || uids.some((u) => !Number.isInteger(u)))
      return `cannot tell which uid ${name} runs as`;
    if (uids.includes(commandUid)) return `${name} and commands share uid ${commandUid}`;
    if (uids.includes(0)) return `${name} still runs as root`;
    if (pid === 'self') agentUid = uids[0];
    for (const set of CAPABILITY_SETS) {
      const value = field(status, set);
      if (value === undefined || !/^0+$/.test(value))
        return `${name} keeps capabilities (${set} ${value ?? 'unknown'})`;
    }
    let owner: number;
    try {
      owner = facts.environOwner(pid);
    } catch (error) {
      return `cannot tell whether ${name} is shielded from commands (${(error as Error).message})`;
    }
    if (owner !== 0) return `${name} is dumpable`;
  }
  return checkSessionFolder(facts, agentUid);
}

function checkSessionFolder(facts: SeparationFacts, agentUid: number | undefined): string | null {
  let folder: ReturnType<SeparationFacts['sessionFolder']>;
  try {
    folder = facts.sessionFolder();
  } catch (error) {
    return `cannot check the session folder (${(error as Error).message})`;
  }
  if (!folder.isDirectory) return 'the session folder is not a folder';
  if (folder.uid !== agentUid) return `the session folder belongs to uid ${folder.uid}, not the agent`;
  if ((folder.mode & 0o077) !== 0)
    return `commands could change the session folder (mode ${(folder.mode & 0o777).toString(8)})`;
  return null;
}

/** The facts of this process, this container's PID 1 and the session folder at `sessionDir`. */
export function procFacts(
  commandUid: number,
  sessionDir: string,
  env: NodeJS.ProcessEnv = process.env,
): SeparationFacts {
  const launcherUid = Number(env.CARAPACE_COMMAND_UID);
  return {
    commandUid,
    launcherCommandUid: Number.isInteger(launcherUid) && launcherUid > 0 ? launcherUid : undefined,
    status: (pid) => fs.readFileSync(`/proc/${pid}/status`, 'utf8'),
    environOwner: (pid) => fs.statSync(`/proc/${pid}/environ`).uid,
    sessionFolder: () => {
      const stat = fs.lstatSync(sessionDir);
      return { isDirectory: stat.isDirectory(), uid: stat.uid, mode: stat.mode };
    },
  };
}

function field(status: string, name: string): string | undefined {
  const match = new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status);
  return match?.[1]?.trim();
}
