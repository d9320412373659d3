import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * `[credentials.<name>]`: a secret the host adds to a container's requests, never the container itself
 * (DESIGN.md, "Credentials"). The value is named by its environment variable only. An `http` credential
 * is an upstream API with an allowlist of methods and paths; a `git` credential is one remote reached over
 * git's smart-HTTP protocol. Each is also a service in the trust matrix: the four properties, each left
 * out counting as `true` (fail closed).
 */

export const CREDENTIAL_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;
const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const CREDENTIAL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type CredentialMethod = (typeof CREDENTIAL_METHODS)[number];

/** Methods that only read: the rest are writes, gated by the matrix. */
export const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/** Headers a credential may not set: they steer the connection or the body, not authentication. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'proxy-authorization',
  'cookie',
]);

/** `Name: text with {value}` or `{base64:user}` (HTTP Basic: base64 of `user:value`). */
const HEADER_PATTERN = /^([A-Za-z0-9-]{1,64}):[ ]*(.*)$/;
const PLACEHOLDER_PATTERN = /\{value\}|\{base64:([^{}:]{1,64})\}/g;

export const HEADER_DEFAULTS = {
  http: 'Authorization: Bearer {value}',
  // GitHub, GitLab and Gitea take a token as the password of HTTP Basic for git; the user name is ignored.
  git: 'Authorization: Basic {base64:x-access-token}',
} as const;

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/**
 * Where the secret goes: https only, since the value crosses the network in a header. Plain http is
 * allowed for a loopback upstream alone (a local service, and the tests' recording servers): the value
 * then never leaves this computer.
 */
const upstreamUrl = (what: string) =>
  z
    .string()
    .max(2048)
    .superRefine((raw, ctx) => {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        ctx.addIssue({ code: 'custom', message: `${what} must be a URL such as https://api.example.com/v1` });
        return;
      }
      if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopbackHost(url.hostname)))
        ctx.addIssue({
          code: 'custom',
          message: `${what} must use https (plain http only for 127.0.0.1, ::1 or localhost): the secret travels in it`,
        });
      if (url.username !== '' || url.password !== '')
        ctx.addIssue({ code: 'custom', message: `${what} must not carry a user or password; use value_env` });
      if (url.search !== '' || url.hash !== '')
        ctx.addIssue({ code: 'custom', message: `${what} must not have a query or fragment` });
    });

/** One allowlist entry, `GET,POST /repos/alice/recipes/**`: `*` is one path segment, `**` any depth. */
export interface AllowRule {
  methods: readonly CredentialMethod[];
  path: string;
}

export function parseAllowRule(text: string): AllowRule | string {
  const match = /^([A-Z,]+)\s+(\/\S*)$/.exec(text.trim());
  if (!match) return `"${text}" is not "METHODS /path", e.g. "GET,POST /repos/alice/recipes/**"`;
  const methods = (match[1] ?? '').split(',');
  for (const m of methods)
    if (!(CREDENTIAL_METHODS as readonly string[]).includes(m))
      return `"${m}" in "${text}" is not one of ${CREDENTIAL_METHODS.join(', ')}`;
  const path = match[2] ?? '/';
  const segments = path.split('/').slice(1);
  if (segments.some((s) => s === '.' || s === '..' || s.includes('%')))
    return `"${text}": a path pattern has no ".", ".." or %-escapes`;
  if (segments.some((s) => s.includes('**') && s !== '**'))
    return `"${text}": "**" stands alone as a path segment`;
  return { methods: methods as CredentialMethod[], path };
}

const trustValue = z.union([z.boolean(), z.literal('forbidden')], {
  error: 'must be true, false or "forbidden"',
});

export const credentialSchema = z
  .object({
    kind: z.enum(['http', 'git'], { error: 'must be "http" or "git"' }),
    /** The environment variable (or `.env` entry) holding the secret; the value itself is never written here. */
    value_env: z
      .string()
      .regex(ENV_NAME_PATTERN, 'must be an environment variable name such as "GITHUB_TOKEN"'),
    /** http: the upstream every allowed path is appended to. */
    base_url: upstreamUrl('base_url').optional(),
    /** git: the one remote clone, fetch and push may reach, e.g. https://github.com/alice/recipes.git. */
    remote: upstreamUrl('remote').optional(),
    /** The header the host adds: `Name: …{value}…` or `{base64:user}` for HTTP Basic. */
    header: z.string().max(512).optional(),
    /** http: `METHODS /path` entries; nothing outside them reaches the upstream. */
    allow: z.array(z.string().max(1024)).max(64).optional(),
    /** git: refs a push to needs the owner; default: the remote's default branch (asked from the remote). */
    protected_refs: z
      .array(
        z
          .string()
          .regex(
            /^refs\/[A-Za-z0-9._/-]{1,250}\*?$/,
            'must be a ref such as "refs/heads/main", or a prefix ending in * such as "refs/heads/release/*"',
          ),
      )
      .max(64)
      .optional(),
    /** Request bodies are read whole to be scanned for secrets; larger ones are refused. */
    max_request_bytes: z
      .number()
      .int()
      .min(1024)
      .max(512 * 1024 * 1024)
      .optional(),
    public_source: trustValue.optional(),
    secret_data: trustValue.optional(),
    public_sink: trustValue.optional(),
    dangerous_writes: trustValue.optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    const problem = (path: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [path], message });
    if (c.kind === 'http') {
      if (c.base_url === undefined) problem('base_url', 'an http credential needs base_url');
      if (c.remote !== undefined) problem('remote', 'remote is for git credentials; use base_url');
      if (c.protected_refs !== undefined) problem('protected_refs', 'protected_refs is for git credentials');
      if (c.allow === undefined || c.allow.length === 0)
        problem(
          'allow',
          'an http credential needs allow = ["GET /path/**", …]: nothing is allowed by default',
        );
      for (const rule of c.allow ?? []) {
        const parsed = parseAllowRule(rule);
        if (typeof parsed === 'string') problem('allow', parsed);
      }
    } else {
      if (c.remote === undefined) problem('remote', 'a git credential needs remote');
      if (c.base_url !== undefined) problem('base_url', 'base_url is for http credentials; use remote');
      if (c.allow !== undefined)
        problem('allow', 'a git credential allows clone, fetch and push of its remote; leave allow out');
    }
    if (c.header !== undefined) {
      const parsed = parseHeaderTemplate(c.header);
      if (typeof parsed === 'string') problem('header', parsed);
    }
  });

export type CredentialConfig = z.output<typeof credentialSchema>;

export const credentialsConfigSchema = z
  .record(z.string(), credentialSchema)
  .superRefine((credentials, ctx) => {
    for (const name of Object.keys(credentials))
      if (!CREDENTIAL_NAME_PATTERN.test(name))
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: `"${name}" is not a credential name; use lowercase letters, digits, "_" or "-", such as "recipes"`,
        });
  })
  .default({});

export type CredentialsConfig = z.output<typeof credentialsConfigSchema>;

export interface HeaderTemplate {
  name: string;
  render(value: string): string;
}

export function parseHeaderTemplate(text: string): HeaderTemplate | string {
  const match = HEADER_PATTERN.exec(text);
  if (!match) return `header "${text}" is not "Name: value", e.g. "Authorization: Bearer {value}"`;
  const name = (match[1] ?? '').toLowerCase();
  const template = match[2] ?? '';
  if (RESERVED_HEADERS.has(name)) return `header ${name} cannot carry a credential`;
  const placeholders = [...template.matchAll(PLACEHOLDER_PATTERN)];
  if (placeholders.length !== 1)
    return `header "${text}" needs exactly one {value} (or {base64:user} for HTTP Basic)`;
  if (/[\r\n]/.test(template)) return 'a header is one line';
  return {
    name,
    render: (value) =>
      template.replace(PLACEHOLDER_PATTERN, (_all, user: string | undefined) =>
        user === undefined ? value : Buffer.from(`${user}:${value}`).toString('base64'),
      ),
  };
}

/** The header a credential adds, its default filled in. */
export function credentialHeader(c: CredentialConfig): HeaderTemplate {
  const parsed = parseHeaderTemplate(c.header ?? HEADER_DEFAULTS[c.kind]);
  // The schema refused any other: reaching this is a bug, and a bug must not send a malformed secret.
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
}

/** The credential's upstream: `base_url` of an http credential, `remote` of a git one. */
export function credentialUpstream(c: CredentialConfig): URL {
  return new URL((c.kind === 'http' ? c.base_url : c.remote) ?? '');
}

export const CREDENTIAL_DEFAULT_MAX_REQUEST_BYTES = 10 * 1024 * 1024;
