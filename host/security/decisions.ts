/**
 * The types every policy decision is made of, in a leaf module: the IPC handlers, the scheduler's task
 * handlers, the container runner and the security policies all speak them, and none of those may import
 * another only for a type (that is how the ipc ↔ scheduler import cycle started).
 */
import type { z } from 'zod';
import type { bashCheckResultSchema } from '../../container-agent/src/protocol.ts';
import type { GroupRecord } from '../store/groups-store.ts';

/** Who the run is: fixed by the host when it attached the container's stdio, never by a payload. */
export interface RunIdentity {
  runId: number;
  group: GroupRecord;
  /**
   * Container paths of the run's mounts that held secret files (from the host's mount plan): reading
   * inside one secret-taints the run (host/security/secret-reads.ts).
   */
  secretMounts: readonly string[];
  /**
   * Container paths of the run's mounts whose folders another group mounts read-write: what that group's
   * runs wrote there is untrusted, so reading inside one corrupts the run (host/security/secret-reads.ts).
   */
  sharedMounts?: readonly string[];
  /**
   * The oldest message the run was given as its conversation (the message that asked, or the context
   * before it); undefined when it was given none (a scheduled task). What it was given is not recalled.
   */
  firstGivenId?: number;
}

/** Whether a reviewed action may go ahead, and why (shown to the agent and audited). */
export interface Verdict {
  allowed: boolean;
  reason: string;
}

/** The host's answer to a command the in-container bash gate escalated. */
export type BashDecision = z.infer<typeof bashCheckResultSchema>;
