import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { DomainError, type DomainErrorKind } from '../../errors/domain-error.ts';
import type { RunIdentity } from '../decisions.ts';
import { invokeService, serviceFailure } from '../../services/service-invoke.ts';
import type { McpServices } from '../../services/mcp/mcp-services.ts';
import {
  createArgumentValidator,
  renderToolResult,
  toolKind,
  type ToolKind,
} from '../../services/mcp/mcp-tools.ts';
import { MCP_DEFAULTS, toolOverride } from '../../services/mcp/mcp-config.ts';
import type { ServiceRegistry } from '../../services/service-registry.ts';
import {
  effectiveTrust,
  toolTrust,
  type ServicesConfig,
  type ServiceTrust,
} from '../../services/service-trust.ts';
import type { AuditStore } from '../../store/audit-store.ts';
import type { HumanApproval } from './bash-policy.ts';
import type { Cop } from '../cop/cop.ts';
import type { MutationReview } from './mutation-review.ts';
import type { Finding } from '../secrets/index.ts';
import type { TaintRegistry } from '../taint/taint.ts';
import { createDecisionRecorder } from './reviewed-decision.ts';
import { gateByMatrix } from './service-matrix.ts';
import type { PrivateTextGate } from './private-text-rule.ts';

export interface ServicePolicyDeps {
  registry: ServiceRegistry;
  /** Read at each call, so a reloaded declaration applies to the next call. */
  servicesConfig(): ServicesConfig;
  /** The services a group may call at all (the admin group gets none that read public content). */
  grantedTo(group: RunIdentity['group']): readonly string[];
  taint: TaintRegistry;
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  scanSecrets(text: string): Promise<Finding[]>;
  audit: AuditStore;
  /** Aborts calls of runs that ended. */
  signalFor(runId: number): AbortSignal;
  /** The MCP servers declared in `[services]`; without it only built-in services exist. */
  mcp?: McpServices;
  /** Host-mutating calls (a stdio server's tools run code on the host): the Cop, then the owner on a flag. */
  reviewMutation?: MutationReview;
  /** What a call sends to a public sink, matched against the group's private text. */
  privateText?: PrivateTextGate;
  /** What a `secret_data` service answered: private text for the rest of the run. */
  secretAnswer?(runId: number, service: string, text: string): void;
}

/** What is being called: a built-in service, or one tool of an MCP server. */
interface Target {
  trust: ServiceTrust;
  kind: ToolKind;
  /** Runs code on the host (a stdio MCP server): reviewed by the Cop whatever the taint. */
  hostMutating: boolean;
  /** What the owner's question shows. */
  details: Record<string, unknown>;
  /** What the Cop reads: a built-in service's parameters, an MCP tool's service, name and arguments. */
  reviewed: unknown;
  call(signal: AbortSignal): Promise<unknown>;
}

/**
 * Gates every host service call by the DESIGN write matrix (service-matrix.ts, shared with credentials):
 * finds what is called (a built-in service or one tool of an MCP server), checks the group may call it and
 * the arguments, and calls it once the matrix let it. Built-in services count as writes.
 */
export function createServicePolicy(deps: ServicePolicyDeps) {
  const { registry, taint, audit } = deps;
  const validArguments = createArgumentValidator();

  return async function callService(
    identity: RunIdentity,
    service: string,
    params: unknown,
    tool?: string,
  ): Promise<unknown> {
    const t = taint.get(identity.runId);
    const operation = tool === undefined ? `service.${service}` : `service.${service}.${tool}`;
    // What the audit rows show; for an MCP tool, the same as the owner's question once it is known.
    let details: Record<string, unknown> = tool === undefined ? { params } : { tool, arguments: params };
    const record = createDecisionRecorder(audit, identity, operation, t, () => details);
    const deny = (reason: string, kind: DomainErrorKind = 'denied') => {
      record('denied', reason);
      return new DomainError(kind, reason);
    };

    const mcp = deps.mcp?.connection(service);
    if (!mcp && !registry.lookup(service)) throw deny(`there is no service "${service}"`, 'invalid');
    if (!deps.grantedTo(identity.group).includes(service)) {
      throw deny(`this group may not use ${service}`, 'forbidden');
    }
    const serviceTrust = effectiveTrust(service, deps.servicesConfig(), registry.builtinTrust());
    let target: Target;
    if (mcp) {
      if (tool === undefined) throw deny(`${service} is an MCP server: name one of its tools`, 'invalid');
      let found: Tool | undefined;
      try {
        found = await deps.mcp?.tool(service, tool);
      } catch (error) {
        record('failed', `listing the tools of ${service} failed`);
        throw serviceFailure(service, error);
      }
      if (!found) throw deny(`${service} has no tool "${tool}"`, 'invalid');
      const args = params ?? {};
      if (typeof args !== 'object' || Array.isArray(args))
        throw deny(`the arguments of ${service}.${tool} must be an object`, 'invalid');
      const problem = validArguments(found, args);
      if (problem) throw deny(`invalid arguments for ${service}.${tool}: ${problem}`, 'invalid');
      const declaration = deps.servicesConfig()[service];
      const override = toolOverride(declaration, tool);
      const shown = { service, tool, arguments: args as Record<string, unknown> };
      details = shown;
      const trust = toolTrust(serviceTrust, override);
      target = {
        trust,
        kind: toolKind(found, override, trust),
        hostMutating: declaration?.type === 'stdio',
        details: shown,
        reviewed: shown,
        call: async (signal) =>
          renderToolResult(
            `${service}.${tool}`,
            await mcp.call(tool, shown.arguments, signal),
            declaration?.max_result_chars ?? MCP_DEFAULTS.max_result_chars,
          ),
      };
    } else {
      if (tool !== undefined) throw deny(`${service} has no tools to name; call it without one`, 'invalid');
      target = {
        trust: serviceTrust,
        kind: 'write',
        hostMutating: false,
        details: { service, params },
        reviewed: params,
        call: (signal) =>
          invokeService(registry, service, params, {
            signal,
            runId: identity.runId,
            groupId: identity.group.id,
          }),
      };
    }
    await gateByMatrix(
      deps,
      identity,
      t,
      {
        operation,
        name: operation.slice('service.'.length),
        trust: target.trust,
        kind: target.kind,
        hostMutating: target.hostMutating,
        details: target.details,
        reviewed: target.reviewed,
        scanned: JSON.stringify(params) ?? '',
        secretFound: 'the parameters contain a secret',
      },
      record,
      deny,
    );
    try {
      const result = await target.call(deps.signalFor(identity.runId));
      if (target.trust.secret_data === true && deps.secretAnswer) {
        deps.secretAnswer(
          identity.runId,
          operation.slice('service.'.length),
          typeof result === 'string' ? result : (JSON.stringify(result) ?? ''),
        );
      }
      return result;
    } catch (error) {
      const failure = serviceFailure(operation.slice('service.'.length), error);
      record('failed', failure.message.slice(0, 1000));
      throw failure;
    }
  };
}
