/**
 * What the bash gate answers for one command, and how findings from the tree walk become that answer.
 *
 * `network` means "may reach the network": true for network tools and `/dev/tcp` redirections, and also
 * for anything that can start an arbitrary program (interpreters, wrappers, unknown commands, input the
 * parser did not understand), because such a program can open a socket itself. It is false only when
 * every reason for escalating is known to stay on this machine (e.g. `kill`), and always for `local`.
 */
import * as z from 'zod';

export const gateVerdictSchema = z
  .object({
    class: z.enum(['local', 'escalate']),
    reason: z.string(),
    network: z.boolean(),
  })
  .strict();
export type GateVerdict = z.infer<typeof gateVerdictSchema>;

/** One reason to escalate, found somewhere in the command. */
export interface Finding {
  reason: string;
  network: boolean;
}

export interface BashClassifier {
  /** Synchronous and side-effect free; never throws (a failure escalates). */
  classify(command: string): GateVerdict;
}

export const LOCAL_REASON = 'every command is on the local allowlist';

/** Reasons are shown to the host, the Cop and humans: keep a few, most relevant first. */
const MAX_REASONS = 3;
const MAX_REASON_CHARS = 600;

export function verdictFromFindings(findings: readonly Finding[]): GateVerdict {
  if (findings.length === 0) return { class: 'local', reason: LOCAL_REASON, network: false };
  // Network reasons first: they decide whether a human must look when the run holds secrets.
  const ordered = [...findings.filter((f) => f.network), ...findings.filter((f) => !f.network)];
  const reasons: string[] = [];
  for (const f of ordered) {
    if (!reasons.includes(f.reason)) reasons.push(f.reason);
    if (reasons.length === MAX_REASONS) break;
  }
  let reason = reasons.join('; ');
  if (reason.length > MAX_REASON_CHARS) reason = `${reason.slice(0, MAX_REASON_CHARS - 1)}…`;
  return { class: 'escalate', reason, network: findings.some((f) => f.network) };
}

/** Quotes a piece of the command for a reason, shortened so one huge word cannot flood it. */
export function quote(text: string, max = 60): string {
  const flat = text.replace(/\s+/g, ' ');
  return `«${flat.length > max ? `${flat.slice(0, max - 1)}…` : flat}»`;
}
