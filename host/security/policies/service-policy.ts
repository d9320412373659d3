import { DomainError, type DomainErrorKind } from '../../errors/domain-error.ts';
import type { RunIdentity } from '../decisions.ts';
import { invokeService } from '../../services/service-invoke.ts';
import type { ServiceRegistry } from '../../services/service-registry.ts';
import { effectiveTrust, forbiddenProperties, type ServicesConfig } from '../../services/service-trust.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { HumanApproval } from './bash-policy.ts';
import type { Cop } from '../cop/cop.ts';
import type { Finding } from '../secrets/index.ts';
import { describeTaint, type TaintRegistry } from '../taint/taint.ts';

export interface ServicePolicyDeps {
  registry: ServiceRegistry;
  servicesConfig: ServicesConfig;
  /** The services a group may call at all (the admin group gets none that read public content). */
  grantedTo(group: RunIdentity['group']): readonly string[];
  taint: TaintRegistry;
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  scanSecrets(text: string): Promise<Finding[]>;
  audit: AuditStore;
  /** Aborts calls of runs that ended. */
  signalFor(runId: number): AbortSignal;
}

/**
 * Gates every host service call by the DESIGN write matrix: forbidden → deny; dangerous_writes → human;
 * corruption + secret + public_sink → human; corruption + public_sink → Cop (a flag goes to a human);
 * else allow. A secret in the parameters goes to a human whatever the taint. The run is tainted by what
 * the service reads before the call, so a failed call still counts as read.
 */
export function createServicePolicy(deps: ServicePolicyDeps) {
  const { registry, taint, cop, human, audit } = deps;
  return async function callService(
    identity: RunIdentity,
    service: string,
    params: unknown,
  ): Promise<unknown> {
    const t = taint.get(identity.runId);
    const record = (decision: string, reason: string, approver?: string) =>
      audit.record({
        runId: identity.runId,
        groupId: identity.group.id,
        operation: `service.${service}`,
        decision,
        taint: describeTaint(t),
        reason,
        approver: approver ?? null,
        details: { params },
      });
    const deny = (reason: string, kind: DomainErrorKind = 'denied') => {
      record('denied', reason);
      return new DomainError(kind, reason);
    };

    if (!registry.lookup(service)) throw deny(`there is no service "${service}"`, 'invalid');
    if (!deps.grantedTo(identity.group).includes(service)) {
      throw deny(`this group may not use ${service}`, 'forbidden');
    }
    const trust = effectiveTrust(service, deps.servicesConfig, registry.builtinTrust());
    const forbidden = forbiddenProperties(trust);
    if (forbidden.length > 0)
      throw deny(`${service} is forbidden by its declaration (${forbidden.join(', ')})`);

    const needsHuman = async (why: string) => {
      if (!(await human.ask(identity, `service.${service}`, why, { service, params }))) {
        throw deny(`not approved by the owner (${why})`);
      }
      record('allowed', `approved by the owner (${why})`, 'owner');
    };
    const findings = await deps.scanSecrets(JSON.stringify(params) ?? '');
    if (findings.length > 0) await needsHuman(`the parameters contain a secret (${findings[0]?.rule})`);
    else if (trust.dangerous_writes === true) await needsHuman(`${service} makes dangerous writes`);
    else if (t.corruption && t.secret && trust.public_sink === true) {
      await needsHuman('a run that read secrets and untrusted content wants to send data out');
    } else if (t.corruption && trust.public_sink === true) {
      const review = await cop.review({
        kind: 'tainted_write',
        operation: `service.${service}`,
        params,
        taint: t,
      });
      record(review.flagged ? 'flagged' : 'passed', `Cop: ${review.reason.slice(0, 500)}`);
      if (review.flagged) await needsHuman(`the Cop flagged it: ${review.reason.slice(0, 300)}`);
    } else record('allowed', 'no taint that this service could leak');

    if (trust.public_source === true) taint.markCorrupted(identity.runId);
    if (trust.secret_data === true) taint.markSecret(identity.runId);
    return invokeService(registry, service, params, {
      signal: deps.signalFor(identity.runId),
      runId: identity.runId,
      groupId: identity.group.id,
    });
  };
}
