import type { IncomingMessage } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { readBodyLimited } from '../request-body.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { isAllowed, parseAllowRules } from './credential-allowlist.ts';
import {
  CREDENTIAL_DEFAULT_MAX_REQUEST_BYTES,
  READ_METHODS,
  type CredentialConfig,
} from './credential-config.ts';
import { Refusal } from './credential-refusal.ts';
import { credentialTrust } from './credential-trust.ts';
import type { CredentialUse } from './credential-use.ts';
import { parsePush } from './git-push.ts';
import type { RemoteRefs } from './git-refs.ts';
import { pushUse } from './push-judgement.ts';

/** A request through a credential as the container sent it, its path already checked for unsafe segments. */
export interface CredentialCall {
  name: string;
  method: string;
  path: string;
  query: string;
}

/** What the request is and what it sends, for the matrix; `body` is what goes upstream. */
export interface JudgedRequest {
  use: CredentialUse;
  body: Buffer | undefined;
}

/** git's smart-HTTP endpoints under a remote; nothing else of the remote's host is reachable. */
function gitEndpoint(method: string, path: string, query: string): 'refs' | 'upload' | 'receive' | undefined {
  if (method === 'GET' && path === '/info/refs' && /^\?service=git-(upload|receive)-pack$/.test(query))
    return 'refs';
  if (method === 'POST' && path === '/git-upload-pack' && query === '') return 'upload';
  if (method === 'POST' && path === '/git-receive-pack' && query === '') return 'receive';
  return undefined;
}

/** The body as text for the secret scanner; a gzip body (git sends some) is opened, within the same bound. */
function bodyText(body: Buffer, encoding: string | undefined, limit: number): Buffer {
  if (encoding === undefined || encoding === 'identity') return body;
  if (encoding === 'gzip') {
    try {
      return gunzipSync(body, { maxOutputLength: limit });
    } catch (error) {
      throw new Refusal(
        413,
        `the gzip body could not be opened within ${limit} bytes: ${errorMessage(error)}`,
      );
    }
  }
  throw new Refusal(415, `a request body encoded as ${encoding} cannot be scanned; send it uncompressed`);
}

/**
 * Reads what the request is and sends, before anyone decides: the allowlist, the body, a push's refs.
 * Throws a Refusal for what no decision could allow. `remoteRefs` asks the remote what its refs point to.
 */
export async function judgeCredentialRequest(
  req: IncomingMessage,
  credential: CredentialConfig,
  call: CredentialCall,
  remoteRefs: () => Promise<RemoteRefs | undefined>,
): Promise<JudgedRequest> {
  const { name, method, path, query } = call;
  const limit = credential.max_request_bytes ?? CREDENTIAL_DEFAULT_MAX_REQUEST_BYTES;
  const readBody = async () => {
    const read = await readBodyLimited(req, limit);
    if (!read.ok)
      throw new Refusal(
        413,
        read.reason === 'too_large'
          ? `the request body is over ${limit} bytes (max_request_bytes)`
          : 'the request was aborted',
      );
    return read.body;
  };
  const base = { credential: name, kind: credential.kind, trust: credentialTrust(credential) };
  if (credential.kind === 'http') {
    if (!isAllowed(parseAllowRules(credential.allow ?? []), method, path))
      throw new Refusal(403, `${method} ${path} is not on the allowlist of credential ${name}`);
    const body = READ_METHODS.has(method) ? undefined : await readBody();
    const text =
      body === undefined ? '' : bodyText(body, req.headers['content-encoding'], limit).toString('utf8');
    return {
      body,
      use: {
        ...base,
        write: !READ_METHODS.has(method),
        scanned: `${method} ${path}${query}\n${text}`,
        secretFound: 'the request contains a secret',
        details: { credential: name, request: `${method} ${path}${query}`, body: text.slice(0, 2000) },
      },
    };
  }
  const endpoint = gitEndpoint(method, path, query);
  if (endpoint === undefined)
    throw new Refusal(
      403,
      `${method} ${path}${query} is not part of git's smart-HTTP protocol for the remote of ${name}`,
    );
  const remote = credential.remote ?? '';
  if (endpoint !== 'receive') {
    const body = endpoint === 'upload' ? await readBody() : undefined;
    // Negotiation names objects by id and is not scanned (hex ids would only make noise); whatever else a
    // container puts in it goes to the one remote, which refuses what is not git's protocol.
    return {
      body,
      use: {
        ...base,
        write: false,
        scanned: '',
        secretFound: '',
        details: { credential: name, remote, fetch: true },
      },
    };
  }
  const body = await readBody();
  let push;
  try {
    push = parsePush(bodyText(body, req.headers['content-encoding'], limit));
  } catch (error) {
    throw new Refusal(400, `the push could not be read: ${errorMessage(error)}`);
  }
  return { body, use: { ...base, ...pushUse(credential, name, push, await remoteRefs()) } };
}
