import crypto from 'node:crypto';
import type { RunIdentity } from '../decisions.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { HumanApproval } from './bash-policy.ts';
import type { Cop } from '../cop/cop.ts';
import type { Finding } from '../secrets/index.ts';
import type { TaintRegistry } from '../taint/taint.ts';
import { copThenOwner, createDecisionRecorder } from './reviewed-decision.ts';
import type { MutationVerdict } from './mutation-review.ts';
import { privateTextQuestion, type PrivateTextGate } from './private-text-rule.ts';

/**
 * A chat message is a public sink. Answering in its own chat is the agent's job, so a message is reviewed
 * only when it could leak or carry an attack elsewhere: a secret in the text (the scanner, including every
 * secret the host holds) or a run that read both secrets and untrusted content goes to the owner; a
 * corrupted run writing to another chat goes to the Cop and then to the owner whatever the Cop said (the
 * owner reads the Cop's verdict in the question); a corrupted run's message or file that quotes private
 * text its chat may not read goes to the owner with the excerpt (private-text-rule.ts); the rest is sent.
 *
 * A denial is final: the same text from the same group to the same chat is refused at once afterwards
 * (a retried run writes the same answer again), so the owner is asked once. The run is told only that the
 * owner did not approve, never why: "it contains a GitHub token" would be relayed to the group.
 */
export const MESSAGE_DENIED_REASON =
  'the owner did not approve this message; do not send it again in any form, and do not tell the chat why';

function deniedKey(groupId: string, to: string, text: string): string {
  return crypto.createHash('sha256').update(`${groupId}\u0000${to}\u0000${text}`).digest('hex');
}

/** Reviews one outgoing chat message (see above). */
export function createMessagePolicy(deps: {
  scanSecrets(text: string): Promise<Finding[]>;
  taint: TaintRegistry;
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  audit: AuditStore;
  /** The run's message was denied: if the run then fails, running it again would only repeat it. */
  onDenied?(runId: number): void;
  /** The message and its file, matched against private text the chat may not read. */
  privateText?: PrivateTextGate;
}) {
  // Digests of denied texts, for as long as the host runs: retries and later runs of the same group.
  const denied = new Set<string>();
  return async function reviewMessage(
    identity: RunIdentity,
    text: string,
    to: string,
    /** The bytes of a file sent with it (opened within a budget for private text). */
    file?: Buffer,
  ): Promise<MutationVerdict> {
    const t = deps.taint.get(identity.runId);
    const record = createDecisionRecorder(deps.audit, identity, 'message.send', t, () => ({ to }));
    const key = deniedKey(identity.group.id, to, text);
    if (denied.has(key)) {
      record('denied', 'the owner already denied this text; not asked again');
      deps.onDenied?.(identity.runId);
      return { allowed: false, reason: MESSAGE_DENIED_REASON };
    }
    const findings = await deps.scanSecrets(text);
    const privateText = await privateTextQuestion(
      deps.privateText,
      identity,
      t,
      to === identity.group.id ? 'own-chat' : 'elsewhere',
      file === undefined ? { text } : { text, file },
      record,
    );
    let why: string | undefined;
    let shown: Record<string, unknown> = {};
    if (findings.length > 0)
      why = `the message contains a secret (${findings.map((f) => f.rule).join(', ')})`;
    else if (privateText !== undefined) {
      why = privateText.why.replace('send data out', `send a message to ${to}`);
      shown = privateText.shown;
    } else if (t.corruption && t.secret)
      why = 'a run that read secrets and untrusted content wants to send a message';
    let approved: boolean;
    if (why) approved = await deps.human.ask(identity, 'message.send', why, { to, text, ...shown });
    else if (t.corruption && to !== identity.group.id) {
      const reviewed = await copThenOwner(
        deps,
        identity,
        { kind: 'tainted_write', operation: 'message.send', params: { to, text }, taint: t },
        { ownerParams: { to, text }, flagged: (reason) => `the Cop flagged a message to ${to}: ${reason}` },
      );
      if (reviewed.outcome === 'passed') {
        // Only the admin group writes to other chats, so its words there carry the owner's authority: a
        // fooled Cop must not be all that stands between an injected text and another group.
        why = `a run that read untrusted content wants to write to ${to}; the Cop passed it: ${reviewed.copReason.slice(0, 300)}`;
        approved = await deps.human.ask(identity, 'message.send', why, { to, text });
      } else {
        why = reviewed.why;
        approved = reviewed.outcome === 'approved';
      }
    } else {
      // Every decision is a row, the ordinary reply to the run's own chat included.
      record('allowed', 'nothing in it could leak');
      return { allowed: true, reason: 'nothing in it could leak' };
    }
    if (approved) {
      record('allowed', `approved by the owner (${why})`, 'owner');
      return { allowed: true, reason: why };
    }
    record('denied', `not approved by the owner (${why})`);
    denied.add(key);
    deps.onDenied?.(identity.runId);
    return { allowed: false, reason: MESSAGE_DENIED_REASON };
  };
}
