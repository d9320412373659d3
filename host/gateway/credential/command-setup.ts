import type { CommandSetup } from '../../../container-agent/src/protocol.ts';
import type { CredentialsConfig } from './credential-config.ts';

export interface GroupCredentialSettings {
  credentials?: readonly string[] | undefined;
  git_name?: string | undefined;
  git_email?: string | undefined;
}

/**
 * What a run's commands get so they can use the group's credentials through the host: the routes' URL and
 * the run's credential key as variables (for `curl -H "Authorization: Bearer $CARAPACE_CREDENTIAL_KEY"
 * $CARAPACE_CREDENTIALS_URL/<name>/…`), and for each git credential a rewrite of its remote to its route
 * (`url.<route>.insteadOf`), with the key sent as a header to the routes only (`http.<routes>/.extraHeader`),
 * so `git clone <remote>` goes through the host and any other remote does not get the key. The group's git
 * identity, when set, is the author and committer of its commits. Undefined when there is nothing to give.
 */
export function credentialCommandSetup(
  credentials: CredentialsConfig,
  group: GroupCredentialSettings | undefined,
  routesUrl: string,
  credentialKey: string,
): CommandSetup | undefined {
  const env: Record<string, string> = {};
  const gitConfig: CommandSetup['gitConfig'] = [];
  const granted = (group?.credentials ?? []).filter((name) => credentials[name] !== undefined);
  if (granted.length > 0) {
    env.CARAPACE_CREDENTIALS_URL = routesUrl;
    env.CARAPACE_CREDENTIAL_KEY = credentialKey;
    env.CARAPACE_CREDENTIALS = granted
      .map((name) => {
        const c = credentials[name];
        return c?.kind === 'git'
          ? `${name} (git ${c.remote ?? ''})`
          : `${name} (http ${(c?.allow ?? []).join('; ')})`;
      })
      .join(', ');
    for (const name of granted) {
      const c = credentials[name];
      if (c?.kind === 'git' && c.remote)
        gitConfig.push({ key: `url.${routesUrl}/${name}.insteadOf`, value: c.remote });
    }
    if (gitConfig.length > 0)
      gitConfig.push({
        key: `http.${routesUrl}/.extraHeader`,
        value: `Authorization: Bearer ${credentialKey}`,
      });
  }
  if (group?.git_name) env.GIT_AUTHOR_NAME = env.GIT_COMMITTER_NAME = group.git_name;
  if (group?.git_email) env.GIT_AUTHOR_EMAIL = env.GIT_COMMITTER_EMAIL = group.git_email;
  return Object.keys(env).length === 0 ? undefined : { env, gitConfig };
}
