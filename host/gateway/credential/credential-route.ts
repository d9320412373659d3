import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { request, type Dispatcher } from 'undici';
import type { KeyOwner } from '../key-registry.ts';
import type { LogLevels } from '../../logging/logger.ts';
import { readBodyLimited } from '../request-body.ts';
import { DomainError } from '../../errors/domain-error.ts';
import { errorMessage } from '../../errors/error-message.ts';
import { isAllowed, parseAllowRules, unsafePathReason } from './credential-allowlist.ts';
import {
  CREDENTIAL_DEFAULT_MAX_REQUEST_BYTES,
  CREDENTIAL_NAME_PATTERN,
  READ_METHODS,
  credentialHeader,
  credentialUpstream,
  type CredentialConfig,
  type CredentialsConfig,
} from './credential-config.ts';
import { credentialTrust } from './credential-trust.ts';
import { isDeletion, parsePush, summarizePush } from './git-push.ts';
import {
  defaultBranchOf,
  lsRefsRequest,
  parseLsRefs,
  refsUpdatedBy,
  UNRESOLVED,
  type RemoteRefs,
} from './git-refs.ts';
import { createRedactingStream, redactionsFor, redactText } from './redacting-stream.ts';
import type { ServiceTrust } from '../../services/service-trust.ts';

/** Where credential routes start on the gateway: `/credentials/<name>/<path>`. */
export const CREDENTIAL_ROUTE_PREFIX = '/credentials/';

/** One request through a credential, as the trust matrix judges it (security/policies/credential-policy.ts). */
export interface CredentialUse {
  credential: string;
  kind: 'http' | 'git';
  trust: ServiceTrust;
  /** A write (POST, PUT, PATCH, DELETE; a git push) is gated by the matrix; a read taints. */
  write: boolean;
  /** What is scanned for secrets: the method, path, query and body; a push's commits and text files. */
  scanned: string;
  secretFound: string;
  /** What the owner's question shows. */
  details: Record<string, unknown>;
  /** Why the owner must approve whatever the taint (a push to a protected ref). */
  ownerMust?: string;
}

/** The audit row every request through a credential leaves, refused ones included. */
export interface CredentialRequestRecord {
  credential: string;
  method: string;
  path: string;
  status: number;
  /** Bytes of the answer the container got. */
  bytes: number;
  /** Why the host refused it, when it did. */
  refused?: string;
}

export interface CredentialRouteDeps {
  /** Read at each request: a reloaded allowlist or grant applies to the next one. */
  credentials(): CredentialsConfig;
  /** The credentials a group may use. */
  grantedTo(groupId: string): readonly string[];
  /** The value behind `value_env`, from the host's environment or `.env`. */
  secret(envName: string): string | undefined;
  /** The matrix: resolves when the request may go on; throws a DomainError saying why not. */
  gate(owner: KeyOwner, use: CredentialUse): Promise<void>;
  record(owner: KeyOwner, row: CredentialRequestRecord): void;
  /** Aborts what a run still has in flight when it ends. */
  signalFor(owner: KeyOwner): AbortSignal;
  dispatcher: Dispatcher;
  logger: LogLevels;
}

/** Client headers that never reach the upstream: the run key, the connection's own, and who the client is. */
const DROPPED_REQUEST_HEADERS = new Set([
  'host',
  'authorization',
  'proxy-authorization',
  'cookie',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'content-length',
  'accept-encoding',
  'forwarded',
  'x-real-ip',
  // Some APIs take the method from these headers: the allowlist judged the request line's method.
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
]);
const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'set-cookie',
  'set-cookie2',
  'www-authenticate',
  'proxy-authenticate',
  'trailer',
  'upgrade',
]);

/** git's smart-HTTP endpoints under a remote; nothing else of the remote's host is reachable. */
function gitEndpoint(method: string, path: string, query: string): 'refs' | 'upload' | 'receive' | undefined {
  if (method === 'GET' && path === '/info/refs' && /^\?service=git-(upload|receive)-pack$/.test(query))
    return 'refs';
  if (method === 'POST' && path === '/git-upload-pack' && query === '') return 'upload';
  if (method === 'POST' && path === '/git-receive-pack' && query === '') return 'receive';
  return undefined;
}

class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function sendRefusal(res: ServerResponse, status: number, message: string): number {
  const body = JSON.stringify({ error: { message } });
  if (res.headersSent) res.destroy();
  else {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  }
  return Buffer.byteLength(body);
}

function upstreamRequestHeaders(
  client: IncomingHttpHeaders,
  credentialHeaderName: string,
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(client)) {
    const lower = name.toLowerCase();
    if (value === undefined || DROPPED_REQUEST_HEADERS.has(lower) || lower === credentialHeaderName) continue;
    if (lower.startsWith('proxy-') || lower.startsWith('x-forwarded-')) continue;
    headers[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  // The answer is read for echoes of the secret, which a compressed body would hide.
  headers['accept-encoding'] = 'identity';
  return headers;
}

function clientResponseHeaders(
  upstream: IncomingHttpHeaders,
  secrets: readonly Buffer[],
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(upstream)) {
    const lower = name.toLowerCase();
    if (value === undefined || DROPPED_RESPONSE_HEADERS.has(lower)) continue;
    headers[lower] = Array.isArray(value)
      ? value.map((v) => redactText(v, secrets))
      : redactText(value, secrets);
  }
  return headers;
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
 * The credential routes of the gateway (DESIGN.md, "Credentials"): a container calls
 * `/credentials/<name>/<path>` with its run's credential key; the host checks that the run's group has the
 * credential and that the request is one it allows (an http credential's allowlist; a git credential's
 * smart-HTTP endpoints of its one remote), reads and scans a body, lets the trust matrix judge it, adds
 * the secret's header and streams the answer back with every echo of the secret replaced. Every request
 * is an audit row.
 */
export function createCredentialRoute(deps: CredentialRouteDeps) {
  return async (req: IncomingMessage, res: ServerResponse, owner: KeyOwner): Promise<void> => {
    const url = req.url ?? '/';
    const queryAt = url.indexOf('?');
    const fullPath = queryAt === -1 ? url : url.slice(0, queryAt);
    const query = queryAt === -1 ? '' : url.slice(queryAt);
    const rest = fullPath.slice(CREDENTIAL_ROUTE_PREFIX.length);
    const slash = rest.indexOf('/');
    const name = slash === -1 ? rest : rest.slice(0, slash);
    const path = slash === -1 ? '/' : rest.slice(slash);
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
      const use = await judge(req, credential, name, method, path, query, value);
      await deps.gate(owner, use.use);
      await forward(
        req,
        res,
        owner,
        credential,
        { method, path, query, body: use.body },
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

  /** Reads what the request is and sends, before anyone decides: the allowlist, the body, a push's refs. */
  async function judge(
    req: IncomingMessage,
    credential: CredentialConfig,
    name: string,
    method: string,
    path: string,
    query: string,
    value: string,
  ): Promise<{ use: CredentialUse; body: Buffer | undefined }> {
    const trust = credentialTrust(credential);
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
    const base = { credential: name, kind: credential.kind, trust };
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
    // Refs are judged by what they resolve to on the remote (master -> main moves main); a remote that does
    // not say what they point to, or names no default branch when none is configured, protects them all.
    const refs = await remoteRefs(credential, value);
    const defaultBranch = refs === undefined ? undefined : defaultBranchOf(refs);
    const protectedRefs = credential.protected_refs ?? (defaultBranch === undefined ? [] : [defaultBranch]);
    const everyRef =
      refs === undefined
        ? 'the remote did not say what its refs point to, so every ref counts as protected'
        : protectedRefs.length === 0 && credential.protected_refs === undefined
          ? "the remote's default branch is unknown, so every branch counts as protected"
          : undefined;
    const matches = (ref: string) =>
      ref === UNRESOLVED ||
      protectedRefs.some((p) => p === ref || (p.endsWith('*') && ref.startsWith(p.slice(0, -1))));
    const touched = push.updates.flatMap((u) => {
      if (refs === undefined || everyRef !== undefined) return [u.ref];
      const hit = refsUpdatedBy(u.ref, refs).find(matches);
      if (hit === undefined) return [];
      return [hit === u.ref ? u.ref : `${hit} (through ${u.ref})`];
    });
    const why =
      push.unreadable > 0
        ? `${push.unreadable} objects of the pack could not be read, so they were not scanned`
        : touched.length === 0
          ? undefined
          : everyRef !== undefined
            ? `${everyRef} (${touched.join(', ')})`
            : `it pushes to protected ${touched.join(', ')}`;
    return {
      body,
      use: {
        ...base,
        write: true,
        scanned: `${push.updates.map((u) => u.ref).join('\n')}\n${push.text}`,
        secretFound: 'the pushed commits contain a secret',
        details: {
          credential: name,
          remote,
          push: push.updates.map((u) => ({
            ref: u.ref,
            from: u.oldId.slice(0, 12),
            to: isDeletion(u) ? 'deleted' : u.newId.slice(0, 12),
          })),
          // The owner (and the Cop) see what the commits say and touch, not only their hashes.
          ...summarizePush(push),
        },
        ...(why === undefined ? {} : { ownerMust: why }),
      },
    };
  }

  /** What the remote's refs point to (protocol v2 `ls-refs`), asked of the remote itself; undefined when it does not say. */
  async function remoteRefs(credential: CredentialConfig, value: string): Promise<RemoteRefs | undefined> {
    const upstream = credentialUpstream(credential);
    const header = credentialHeader(credential);
    try {
      const answer = await request(`${upstream.origin}${upstream.pathname}/git-upload-pack`, {
        method: 'POST',
        dispatcher: deps.dispatcher,
        headers: {
          [header.name]: header.render(value),
          'user-agent': 'git/carapace',
          'git-protocol': 'version=2',
          'content-type': 'application/x-git-upload-pack-request',
          accept: 'application/x-git-upload-pack-result',
        },
        body: lsRefsRequest(),
        signal: AbortSignal.timeout(15_000),
      });
      const text = Buffer.from(await answer.body.arrayBuffer());
      return answer.statusCode === 200 ? parseLsRefs(text) : undefined;
    } catch {
      return undefined;
    }
  }

  async function forward(
    req: IncomingMessage,
    res: ServerResponse,
    owner: KeyOwner,
    credential: CredentialConfig,
    call: { method: string; path: string; query: string; body: Buffer | undefined },
    headerName: string,
    headerValue: string,
    secrets: readonly Buffer[],
    row: { credential: string; method: string; path: string },
  ): Promise<void> {
    const upstream = credentialUpstream(credential);
    const basePath = upstream.pathname.replace(/\/$/, '');
    const controller = new AbortController();
    const signal = AbortSignal.any([controller.signal, deps.signalFor(owner)]);
    res.on('close', () => {
      if (!res.writableFinished) controller.abort();
    });
    const headers = upstreamRequestHeaders(req.headers, headerName);
    headers[headerName] = headerValue;
    const answer = await request(`${upstream.origin}${basePath}${call.path}${call.query}`, {
      method: call.method as Dispatcher.HttpMethod,
      headers,
      ...(call.body === undefined ? {} : { body: call.body }),
      dispatcher: deps.dispatcher,
      signal,
    });
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    res.writeHead(answer.statusCode, clientResponseHeaders(answer.headers, secrets));
    try {
      await pipeline(answer.body, createRedactingStream(secrets), counter, res);
    } catch (error) {
      // The container went away, or the upstream broke off: the answer stops where it was.
      res.destroy();
      deps.logger.warn(
        { credential: row.credential, err: redactText(errorMessage(error), secrets) },
        'gateway: a credential answer was cut off',
      );
    } finally {
      deps.record(owner, { ...row, status: answer.statusCode, bytes });
    }
  }
}
