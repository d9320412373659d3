import { z } from 'zod';
import { TOOL_NAME_PATTERN } from '../../../container-agent/src/protocol.ts';

/**
 * The keys of `[services.<name>]` that make it an MCP server the host runs or reaches (next to the four
 * trust properties, see service-trust.ts). Values of secrets are never written here: `env` and `headers`
 * name environment variables (or `.env` entries) whose values the host passes on.
 */

const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME_PATTERN = /^[A-Za-z0-9-]{1,64}$/;

/** A Docker image reference: [registry/]repository[:tag][@digest], nothing Docker would read as an option. */
const IMAGE_PATTERN = /^[a-z0-9][a-z0-9._/:-]{0,254}(@sha256:[a-f0-9]{64})?$/;

/** A path the way Docker and the kernel take it literally: absolute, no `.`/`..`, no doubled or trailing `/`. */
const plainAbsolutePath = (what: string) =>
  z
    .string()
    .max(4096)
    .refine(
      (p) => p === '/' || (/^(\/[^/]+)+$/.test(p) && !p.split('/').some((c) => c === '.' || c === '..')),
      `${what} must be an absolute path without ".", ".." or doubled slashes`,
    )
    .refine((p) => !p.includes(':') && !p.includes(','), `${what} must not contain ":" or ","`);

/** `mounts = [{ host_path, container_path, read_write }]` of a docker server. */
const dockerMountSchema = z
  .object({
    host_path: plainAbsolutePath('host_path'),
    container_path: plainAbsolutePath('container_path').refine(
      (p) => p !== '/',
      'container_path must not be "/"',
    ),
    /** Read-only unless the owner says so. */
    read_write: z.boolean().optional(),
  })
  .strict();

const trustValue = z.union([z.boolean(), z.literal('forbidden')], {
  error: 'must be true, false or "forbidden"',
});

/** `[services.<name>.tools.<tool>]`: the owner's word on one tool, above the server's annotations. */
export const toolOverrideSchema = z
  .object({
    /** "read" gets data (taints, never gated); "write" acts on something (gated by the trust matrix). */
    kind: z.enum(['read', 'write']).optional(),
    public_source: trustValue.optional(),
    secret_data: trustValue.optional(),
    public_sink: trustValue.optional(),
    dangerous_writes: trustValue.optional(),
  })
  .strict();
export type ToolOverride = z.output<typeof toolOverrideSchema>;

const envName = z
  .string()
  .regex(ENV_NAME_PATTERN, 'must be an environment variable name such as "GITHUB_TOKEN"');

export const mcpServerFields = {
  /**
   * stdio: a subprocess of the host; docker: the server in a container of its own, talked to over its
   * stdin/stdout; http: a remote Streamable HTTP server.
   */
  type: z.enum(['stdio', 'docker', 'http'], { error: 'must be "stdio", "docker" or "http"' }).optional(),
  /**
   * stdio: the program to run, found on PATH or by absolute path. docker: the program to run in the image
   * instead of its entrypoint, with `args`; without a command, `args` go to the image's entrypoint.
   */
  command: z.string().min(1).max(4096).optional(),
  args: z.array(z.string().max(4096)).max(64).optional(),
  /** stdio, docker: names of variables whose values (from the environment or .env) the server gets. */
  env: z.array(envName).max(64).optional(),
  /** docker: the image the server runs from; the host never pulls it (`docker pull` it yourself). */
  image: z
    .string()
    .regex(
      IMAGE_PATTERN,
      'must be a Docker image reference such as "mcp/fetch:1.0" or "ghcr.io/o/s@sha256:…"',
    )
    .optional(),
  /** docker: the only host folders or files the container sees; read-only unless `read_write = true`. */
  mounts: z.array(dockerMountSchema).max(16).optional(),
  /**
   * docker: "none" (the default) gives the container no network at all, only loopback: it reaches neither
   * the internet, nor the host, nor the LLM gateway, nor other containers. "egress" is for servers that
   * fetch from the internet: a bridge network of the server's own, from which the host's own addresses
   * stay closed.
   */
  network: z.enum(['none', 'egress'], { error: 'must be "none" or "egress"' }).optional(),
  /** docker: the container's memory limit (swap included). */
  memory_mb: z.number().int().min(32).max(65_536).optional(),
  /** http: the server's MCP endpoint. */
  url: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as "https://mcp.example.com/mcp"' })
    .optional(),
  /** http: header name → name of the variable holding its value, added by the host on every request. */
  headers: z.record(z.string().regex(HEADER_NAME_PATTERN, 'must be an HTTP header name'), envName).optional(),
  /** "lazy": started by the first run that needs it; "at_start": started with the host. */
  start: z.enum(['lazy', 'at_start']).optional(),
  /** One tool call (and the connection) may take this long. */
  timeout_ms: z.number().int().min(100).max(600_000).optional(),
  /** Characters of a tool's result handed back to the agent; the rest is cut. */
  max_result_chars: z.number().int().min(1000).max(300_000).optional(),
  /**
   * A stdio server runs code on the host: only the admin group may be given one unless the owner says so
   * here.
   */
  allow_non_admin: z.boolean().optional(),
  tools: z
    .record(
      z.string().regex(TOOL_NAME_PATTERN, 'must be a tool name as the server lists it'),
      toolOverrideSchema,
    )
    .optional(),
};

/** The owner's `[services.<name>.tools.<tool>]`, own keys only (a tool may be called "constructor"). */
export function toolOverride(
  declaration: { tools?: Record<string, ToolOverride> | undefined } | undefined,
  tool: string,
): ToolOverride | undefined {
  const tools = declaration?.tools;
  return tools && Object.prototype.hasOwnProperty.call(tools, tool) ? tools[tool] : undefined;
}

export const MCP_DEFAULTS = {
  start: 'lazy',
  timeout_ms: 30_000,
  max_result_chars: 50_000,
} as const;

type Fields = { [K in keyof typeof mcpServerFields]?: z.output<(typeof mcpServerFields)[K]> };

const DOCKER_ONLY: (keyof Fields)[] = ['image', 'mounts', 'network', 'memory_mb'];

/** Checks between fields that zod's shape cannot say (which keys each type needs or may have). */
export function mcpServerProblems(declared: Fields): { path: string; message: string }[] {
  const problems: { path: string; message: string }[] = [];
  const only = (type: string, keys: (keyof Fields)[]) => {
    for (const key of keys)
      if (declared[key] !== undefined) problems.push({ path: key, message: `only for type = "${type}"` });
  };
  if (declared.type === undefined) {
    for (const key of Object.keys(mcpServerFields) as (keyof Fields)[]) {
      if (declared[key] !== undefined)
        problems.push({ path: key, message: 'set type = "stdio", "docker" or "http" for an MCP server' });
    }
  } else if (declared.type === 'stdio') {
    if (!declared.command) problems.push({ path: 'command', message: 'a stdio server needs a command' });
    only('http', ['url', 'headers']);
    only('docker', DOCKER_ONLY);
  } else if (declared.type === 'docker') {
    if (!declared.image) problems.push({ path: 'image', message: 'a docker server needs an image' });
    only('http', ['url', 'headers']);
    only('stdio', ['allow_non_admin']);
  } else if (declared.type === 'http') {
    if (!declared.url) problems.push({ path: 'url', message: 'an http server needs a url' });
    only('stdio', ['command', 'args', 'env', 'allow_non_admin']);
    only('docker', DOCKER_ONLY);
  }
  return problems;
}
