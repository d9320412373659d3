import type { HostConfig } from './schema.ts';
import { credentialTrust } from '../services/credential/credential-trust.ts';

/**
 * What `[credentials]` and the groups' `credentials` lists must not say, beyond the schema: a group given
 * a credential that does not exist (a typo grants nothing), and the admin group given one that reads
 * public content (the clean room, as for services: the one chat that approves must not read strangers).
 */
export function credentialConfigProblems(config: HostConfig, adminGroupId: string): string[] {
  const problems: string[] = [];
  const known = Object.keys(config.credentials).sort();
  for (const [id, group] of Object.entries(config.groups)) {
    for (const name of group.credentials ?? []) {
      const credential = config.credentials[name];
      if (credential === undefined)
        problems.push(
          `groups.${id}.credentials: there is no credential "${name}" (the config has ${known.join(', ') || 'none'})`,
        );
      else if (id === adminGroupId && credentialTrust(credential).public_source !== false)
        problems.push(
          `groups.${id}.credentials: ${name} reads content strangers may write (public_source), and ${id} is the admin group; ` +
            `set public_source = false in [credentials.${name}] only if nobody else writes there`,
        );
    }
  }
  return problems;
}
