import type { DomainError } from '../../errors/domain-error.ts';
import { forbiddenProperties, type ServiceTrust } from '../../services/service-trust.ts';
import type { Cop } from '../cop/cop.ts';
import type { RunIdentity } from '../decisions.ts';
import type { Finding } from '../secrets/index.ts';
import type { Taint, TaintRegistry } from '../taint/taint.ts';
import type { MutationReview } from './mutation-review.ts';
import { privateTextQuestion, type PrivateTextGate } from './private-text-rule.ts';
import { copThenOwner, type DecisionRecorder, type HumanApproval } from './reviewed-decision.ts';

export interface ServiceMatrixDeps {
  taint: Pick<TaintRegistry, 'markCorrupted' | 'markSecret'>;
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  scanSecrets(text: string): Promise<Finding[]>;
  /** Host-mutating calls (a stdio server's tools run code on the host): the Cop, then the owner on a flag. */
  reviewMutation?: MutationReview;
  /** What the call sends to a public sink, matched against the group's private text (private-text-rule.ts). */
  privateText?: PrivateTextGate;
}

/** One use of a service as the matrix judges it: a built-in service, an MCP tool or a credential. */
export interface MatrixCall {
  /** The audit operation, e.g. `service.web_fetch` or `credential.recipes`. */
  operation: string;
  /** How the owner's question and refusals name it. */
  name: string;
  trust: ServiceTrust;
  kind: 'read' | 'write';
  /** Runs code on the host (a stdio MCP server): reviewed by the Cop whatever the taint. */
  hostMutating: boolean;
  /** What the owner's question shows and the approval is bound to. */
  details: Record<string, unknown>;
  /** What the Cop reads. */
  reviewed: unknown;
  /** The text scanned for secrets (the parameters, a request body, a push's messages and text files). */
  scanned: string;
  /** How the owner's question says a secret was found in it: "the parameters contain a secret". */
  secretFound: string;
  /** Why the owner must approve this call whatever the taint (a push to a protected ref). */
  ownerMust?: string;
}

/**
 * The write matrix of DESIGN.md, in one place for every kind of service. A write: forbidden → deny;
 * dangerous_writes → human; corruption + secret + public_sink → human; corruption + public_sink → Cop (a
 * flag goes to a human); else allow. A read is not gated by the matrix. Either way a secret in what is
 * sent goes to a human whatever the taint, what a public sink is sent that quotes private text goes to a
 * human in a corrupted run whatever the Cop would say (private-text-rule.ts), and a call that runs code on the host is reviewed by the Cop
 * (through the mutation review) when nothing stricter already decided it. Resolves when the call may go
 * ahead, with the run tainted by what the service reads (before the call, so a failed call still counts
 * as read); throws `deny(reason)` otherwise. Every decision is a row through `record`.
 */
export async function gateByMatrix(
  deps: ServiceMatrixDeps,
  identity: RunIdentity,
  t: Taint,
  call: MatrixCall,
  record: DecisionRecorder,
  deny: (reason: string) => DomainError,
): Promise<void> {
  const { trust, name } = call;
  const forbidden = forbiddenProperties(trust);
  if (forbidden.length > 0) throw deny(`${name} is forbidden by its declaration (${forbidden.join(', ')})`);

  const ownerDecided = (approved: boolean, why: string) => {
    if (!approved) throw deny(`not approved by the owner (${why})`);
    record('allowed', `approved by the owner (${why})`, 'owner');
  };
  const needsHuman = async (why: string, shown: Record<string, unknown> = {}) =>
    ownerDecided(await deps.human.ask(identity, call.operation, why, { ...call.details, ...shown }), why);
  const write = call.kind === 'write';
  const findings = await deps.scanSecrets(call.scanned);
  // A sink's arguments leave whatever the call is called (a read on a sink still sends them).
  const privateText =
    trust.public_sink === true
      ? await privateTextQuestion(deps.privateText, identity, t, 'elsewhere', { text: call.scanned }, record)
      : undefined;
  if (findings.length > 0) await needsHuman(`${call.secretFound} (${findings[0]?.rule})`);
  else if (privateText !== undefined) {
    const why = call.ownerMust === undefined ? privateText.why : `${privateText.why}; ${call.ownerMust}`;
    await needsHuman(why, privateText.shown);
  } else if (call.ownerMust !== undefined) await needsHuman(call.ownerMust);
  else if (write && trust.dangerous_writes === true) await needsHuman(`${name} makes dangerous writes`);
  else if (write && t.corruption && t.secret && trust.public_sink === true) {
    await needsHuman('a run that read secrets and untrusted content wants to send data out');
  } else if (write && t.corruption && trust.public_sink === true) {
    const reviewed = await copThenOwner(
      deps,
      identity,
      { kind: 'tainted_write', operation: call.operation, params: call.reviewed, taint: t },
      {
        ownerParams: call.details,
        flagged: (reason) => `the Cop flagged it: ${reason}`,
        // The verdict is a row of the call itself, as the matrix decided there.
        verdictRow: { record, reason: (reason) => `Cop: ${reason.slice(0, 500)}` },
      },
    );
    if (reviewed.outcome !== 'passed') ownerDecided(reviewed.outcome === 'approved', reviewed.why);
  } else if (call.hostMutating) {
    if (!deps.reviewMutation) throw deny(`${name} runs code on the host and nothing can review it`);
    const verdict = await deps.reviewMutation(identity, call.operation, call.details);
    if (!verdict.allowed) throw deny(verdict.reason);
    record('allowed', `runs code on the host: ${verdict.reason}`);
  } else record('allowed', write ? 'no taint that this service could leak' : 'a read');

  if (trust.public_source === true) deps.taint.markCorrupted(identity.runId);
  if (trust.secret_data === true) deps.taint.markSecret(identity.runId);
}
