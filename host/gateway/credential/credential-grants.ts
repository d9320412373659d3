import type { CredentialsConfig } from './credential-config.ts';
import { credentialTrust } from './credential-trust.ts';

/** The part of the host's config the grants are checked in (config/schema.ts's `HostConfig` is one). */
export interface CredentialGrantsConfig {
  credentials: CredentialsConfig;
  groups: Record<string, { credentials?: readonly string[] | undefined }>;
  /** The channel accounts' default credentials, by account label (`telegram.work`). */
  accounts?: Record<string, { credentials?: readonly string[] | undefined }>;
}

/**
 * What `[credentials]` and the groups' `credentials` lists must not say, beyond the schema: a group given
 * a credential that does not exist (a typo grants nothing), and the admin group given one that reads
 * public content (the clean room, as for services: the one chat that approves must not read strangers).
 */
export function credentialConfigProblems(config: CredentialGrantsConfig, adminGroupId: string): string[] {
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
  for (const [label, account] of Object.entries(config.accounts ?? {}))
    for (const name of account.credentials ?? [])
      if (config.credentials[name] === undefined)
        problems.push(
          `channels.${label}.credentials: there is no credential "${name}" (the config has ${known.join(', ') || 'none'})`,
        );
  return problems;
}
