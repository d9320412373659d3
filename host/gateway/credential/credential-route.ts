import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyOwner } from '../key-registry.ts';
import { DomainError } from '../../errors/domain-error.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { unsafePathReason } from './credential-allowlist.ts';
import { CREDENTIAL_NAME_PATTERN, credentialHeader } from './credential-config.ts';
import { judgeCredentialRequest } from './credential-judge.ts';
import { Refusal, sendRefusal } from './credential-refusal.ts';
import { relayCredentialRequest } from './credential-relay.ts';
import type { CredentialRouteDeps } from './credential-use.ts';
import { askRemoteRefs } from './push-judgement.ts';
import { redactionsFor, redactText } from './redacting-stream.ts';

/** Where credential routes start on the gateway: `/credentials/<name>/<path>`. */
export const CREDENTIAL_ROUTE_PREFIX = '/credentials/';

/** The request line split as the route reads it: `/credentials/<name><path>?<query>`. */
function splitCredentialUrl(url: string): { name: string; path: string; query: string } {
  const queryAt = url.indexOf('?');
  const fullPath = queryAt === -1 ? url : url.slice(0, queryAt);
  const query = queryAt === -1 ? '' : url.slice(queryAt);
  const rest = fullPath.slice(CREDENTIAL_ROUTE_PREFIX.length);
  const slash = rest.indexOf('/');
  const name = slash === -1 ? rest : rest.slice(0, slash);
  const path = slash === -1 ? '/' : rest.slice(slash);
  return { name, path, query };
}

/**
 * The credential routes of the gateway (DESIGN.md, "Credentials"): a container calls
 * `/credentials/<name>/<path>` with its run's credential key; the host checks that the run's group has the
 * credential and that the request is one it allows (an http credential's allowlist; a git credential's
 * smart-HTTP endpoints of its one remote; credential-judge.ts), reads and scans a body, lets the trust
 * matrix judge it, adds the secret's header and streams the answer back with every echo of the secret
 * replaced (credential-relay.ts). Every request is an audit row.
 */
export function createCredentialRoute(deps: CredentialRouteDeps) {
  return async (req: IncomingMessage, res: ServerResponse, owner: KeyOwner): Promise<void> => {
    const { name, path, query } = splitCredentialUrl(req.url ?? '/');
    const method = req.method ?? 'GET';
    // The container wrote these: an audit row names only a well-formed credential and a bounded path.
    const row = {
      credential: CREDENTIAL_NAME_PATTERN.test(name) ? name : '(not a credential name)',
      method: method.slice(0, 16),
      path: (path + query).slice(0, 2000),
    };
    const refuse = (status: number, message: string) => {
      req.resume();
      const bytes = sendRefusal(res, status, message);
      deps.record(owner, { ...row, status, bytes, refused: message });
    };

    const credential = Object.prototype.hasOwnProperty.call(deps.credentials(), name)
      ? deps.credentials()[name]
      : undefined;
    if (credential === undefined || !deps.grantedTo(owner.groupId).includes(name)) {
      refuse(403, `this group has no credential "${name}"`);
      return;
    }
    const unsafe = unsafePathReason(path);
    if (unsafe !== undefined) {
      refuse(400, `${method} ${path} refused: ${unsafe}`);
      return;
    }
    const value = deps.secret(credential.value_env);
    if (value === undefined || value === '') {
      refuse(
        503,
        `credential ${name} has no value on the host (${credential.value_env} is not set); the owner must set it`,
      );
      return;
    }
    const header = credentialHeader(credential);
    const secrets = redactionsFor([value, header.render(value), encodeURIComponent(value)]);
    try {
      const judged = await judgeCredentialRequest(req, credential, { name, method, path, query }, () =>
        askRemoteRefs(credential, value, deps.dispatcher, deps.clock),
      );
      await deps.gate(owner, judged.use);
      await relayCredentialRequest(
        deps,
        req,
        res,
        owner,
        credential,
        { method, path, query, body: judged.body },
        header.name,
        header.render(value),
        secrets,
        row,
      );
    } catch (error) {
      if (error instanceof Refusal) refuse(error.status, redactText(error.message, secrets));
      else if (error instanceof DomainError) refuse(403, redactText(error.message, secrets));
      else {
        deps.logger.error(
          { credential: name, err: redactText(errorMessage(error), secrets) },
          'gateway: credential request failed',
        );
        refuse(
          502,
          `credential ${name}: the upstream could not be reached (${redactText(errorMessage(error), secrets)})`,
        );
      }
    }
  };
}
