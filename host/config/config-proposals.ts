import type { z } from 'zod';
import type {
  configProposeParamsSchema,
  configProposeResultSchema,
  configReadResultSchema,
} from '../../container-agent/src/protocol.ts';
import { formatProblem } from './config-error.ts';
import { formatDiff } from './config-diff.ts';
import { StaleConfigError, type ConfigFileStore } from './config-file-store.ts';
import { checkConfigPatch } from './config-patch.ts';
import type { ReloadConfig } from './config-reload.ts';
import type { HostConfig } from './schema.ts';
import { parseConfigPath, type PatchEntry } from './toml-edit.ts';
import type { RunIdentity } from '../security/decisions.ts';
import type { AuditStore } from '../store/audit-store.ts';
import type { HumanApproval } from '../security/policies/bash-policy.ts';
import type { Cop } from '../security/cop/cop.ts';
import { copThenOwner } from '../security/policies/reviewed-decision.ts';
import { describeTaint, type TaintRegistry } from '../security/taint/taint.ts';
import { errorMessage } from '../errors/error-message.ts';

export type ConfigProposal = z.infer<typeof configProposeParamsSchema>;
export type ConfigProposalResult = z.infer<typeof configProposeResultSchema>;
export type ConfigReadResult = z.infer<typeof configReadResultSchema>;

export interface ConfigProposalDeps {
  files: Pick<ConfigFileStore, 'configFile' | 'read' | 'write'>;
  /** The shipped example's text: its values are quoted in the problems, as at start. */
  exampleText: string;
  /** Problems the schema cannot see (groups, services, the admin clean room); see config-references.ts. */
  referenceProblems(before: HostConfig, after: HostConfig): string[];
  /** Hides secrets (held ones and anything that looks like one) in what the agent is shown. */
  redactText(text: string): Promise<string>;
  cop: Pick<Cop, 'review'>;
  human: HumanApproval;
  taint: Pick<TaintRegistry, 'get'>;
  audit: Pick<AuditStore, 'record'>;
  /** Asks the running host to apply the file just written; see config-reload.ts. */
  reload: ReloadConfig;
}

const OPERATION = 'config.propose';
const MAX_DETAIL = 16 * 1024;
const detail = (text: string) =>
  text.length <= MAX_DETAIL ? text : `${text.slice(0, MAX_DETAIL - 20)}\n… [shortened]`;

/** What the Cop said, as the owner's question and the audit show it. */
const copSays = (flagged: boolean, reason: string) =>
  flagged ? `FLAGGED by the Cop: ${reason}` : `the Cop passed it: ${reason}`;

const refused = (text: string): ConfigProposalResult => ({ status: 'refused', detail: detail(text) });

const STALE =
  'config.toml changed since you read it, so nothing was changed; read it again (read_config) and redo the change on the new version';

/**
 * The admin agent's config changes (issue 11): the host merges the typed patch into the version the agent
 * read, checks it like a start (schema, references, the admin clean room), refuses protected keys without
 * asking anyone, has the Cop review it and then asks the owner in every case: a config change outlives the
 * conversation, so a Cop pass is shown to the owner, never a substitute for them. The approval is bound to
 * the base hash and the patch; the write happens only over that same base, so a file changed meanwhile
 * (a hand edit, another proposal) is refused, never merged.
 */
export function createConfigProposals(deps: ConfigProposalDeps) {
  const { files, audit } = deps;

  return {
    async read(): Promise<ConfigReadResult> {
      const { text, hash } = files.read();
      return { text: await deps.redactText(text), hash };
    },

    async propose(identity: RunIdentity, proposal: ConfigProposal): Promise<ConfigProposalResult> {
      const { runId, group } = identity;
      const record = (operation: string, decision: string, reason: string, details?: unknown) =>
        audit.record({ runId, groupId: group.id, operation, decision, reason, details });
      const refuse = (why: string, text: string) => {
        record(OPERATION, 'refused', why, { baseHash: proposal.baseHash, changes: proposal.changes });
        return refused(text);
      };

      let patch: PatchEntry[];
      try {
        patch = proposal.changes.map((c) => ({ path: parseConfigPath(c.key), value: c.value }));
      } catch (err) {
        return refuse('a key is not a key path', errorMessage(err));
      }
      const current = files.read();
      if (current.hash !== proposal.baseHash)
        return refuse('stale: the file changed since it was read', STALE);
      const checked = checkConfigPatch({
        file: files.configFile,
        text: current.text,
        patch,
        exampleText: deps.exampleText,
      });
      if (!checked.ok) {
        const lines = checked.problems.map(formatProblem);
        return refuse('invalid', `The change is not valid; nothing was changed:\n${lines.join('\n')}`);
      }
      if (checked.protected.length > 0) {
        const keys = checked.protected.map((t) => `${t.key} (${t.why})`);
        return refuse(
          `protected keys: ${checked.protected.map((t) => t.key).join(', ')}`,
          'Only the owner can change these, in config.toml or with `carapace config set`; nothing was changed ' +
            `and nobody was asked:\n${keys.join('\n')}`,
        );
      }
      if (checked.changes.length === 0)
        return refuse('no change', 'That changes nothing in the effective configuration.');
      const problems = deps.referenceProblems(checked.before, checked.config);
      if (problems.length > 0)
        return refuse(
          'references',
          `The change does not fit this host; nothing was changed:\n${problems.join('\n')}`,
        );

      const diff = formatDiff(checked.changes).split('\n');
      // What the change does beyond its keys (a price of 0 lifts the cap), said plainly to the Cop and
      // the owner, so nothing with such an effect reaches them as an ordinary change.
      const effects = checked.effects.map((e) => `this ${e.effect}`);
      const withEffects = effects.length > 0 ? { effects } : {};
      const taint = deps.taint.get(runId);
      // The approval is bound to exactly these parameters (their canonical hash): the base version, the
      // patch and the diff the owner reads. The agent's reason is shown as what it is, the agent's words.
      const what =
        effects.length === 0
          ? 'a config change'
          : `a config change with effects to weigh: ${effects.join('; ')}`;
      const reviewed = await copThenOwner(
        deps,
        identity,
        {
          kind: 'host_mutation',
          operation: OPERATION,
          params: { changes: proposal.changes, diff, ...withEffects, reason: proposal.reason },
          taint,
        },
        {
          ownerParams: {
            base_hash: current.hash,
            changes: proposal.changes,
            diff,
            ...withEffects,
            agent_reason: proposal.reason,
          },
          flagged: (reason) => `${what}; ${copSays(true, reason)}`,
          passed: (reason) => `${what}; ${copSays(false, reason)}`,
          verdictRow: {
            record: (decision, reason) =>
              record(`${OPERATION}.cop`, decision, reason, { baseHash: current.hash }),
          },
        },
      );
      // With `passed` given the owner is asked in every case: anything but their approve is a deny.
      if (reviewed.outcome !== 'approved') {
        const said = copSays(
          reviewed.outcome === 'denied' && reviewed.flagged,
          reviewed.copReason.slice(0, 300),
        );
        record(OPERATION, 'denied', `not approved by the owner (${said})`, {
          baseHash: current.hash,
          diff,
          effects,
        });
        return { status: 'denied', detail: 'The owner did not approve the change; nothing was changed.' };
      }

      let newHash: string;
      try {
        newHash = files.write(checked.text, current.hash);
      } catch (err) {
        if (err instanceof StaleConfigError)
          return refuse('stale at write: the file changed while the owner decided', STALE);
        throw err;
      }
      record(OPERATION, 'applied', 'approved by the owner', {
        baseHash: current.hash,
        newHash,
        diff,
        effects,
        taint: describeTaint(taint),
      });
      const reloaded = await deps.reload(
        `config change approved by the owner (group ${group.id}, run ${runId})`,
      );
      return {
        status: 'applied',
        detail: detail(
          `Changed:\n${diff.join('\n')}\n${reloaded.ok ? '' : 'The running host did not take it: '}${reloaded.detail}`,
        ),
      };
    },
  };
}
