import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../logging/logger.ts';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { errorMessage } from '../../errors/error-message.ts';
import { systemClock, type Clock } from '../../time/clock.ts';
import { ServiceError } from '../service-registry.ts';
import type { ServiceTrustDeclaration } from '../service-trust.ts';
import { MCP_DEFAULTS } from './mcp-config.ts';

/** What `status` and `doctor` show of one server. */
export interface McpServerStatus {
  name: string;
  type: 'stdio' | 'docker' | 'http';
  state: 'stopped' | 'starting' | 'ready' | 'restarting' | 'broken';
  /** Tools listed at the last successful listing; null before the first. */
  tools: number | null;
  lastError: string | null;
  restarts: number;
  /** A stdio server's process id while it runs. */
  pid: number | null;
  /** A docker server's container name while it runs. */
  container: string | null;
}

/** An MCP transport over a container's stdin and stdout (host/containers/run/mcp-server-container.ts). */
export interface ContainerTransport extends Transport {
  /** The container's name once started. */
  readonly containerName: string | undefined;
}

/**
 * Makes the transport of a `type = "docker"` server: given by the host's root, which knows Docker, so
 * this layer does not. `env` holds the values of the variables the declaration names.
 */
export type ContainerTransportFactory = (
  name: string,
  declaration: ServiceTrustDeclaration,
  env: Record<string, string>,
  onStderr: (line: string) => void,
) => ContainerTransport;

export interface McpConnection {
  /** The server's tools, listed once and kept until it says they changed (or restarts). */
  tools(): Promise<readonly Tool[]>;
  call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<CallToolResult>;
  /** Starts the server now (for `start = "at_start"` and `doctor`). */
  start(): Promise<void>;
  status(): McpServerStatus;
  close(): Promise<void>;
}

export interface McpConnectionDeps {
  name: string;
  declaration: ServiceTrustDeclaration;
  /** A variable's value from the environment or .env; undefined when unset. */
  secret(name: string): string | undefined;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Where `type = "docker"` servers run; without it they fail to start, saying so. */
  containers?: ContainerTransportFactory;
  /** Restarts after a crash: base delay, and how many in a row before the breaker opens. */
  restart?: { baseMs: number; maxInARow: number; coolDownMs: number };
  /** Times the restarts and the breaker's cool-down (default: the system clock). */
  clock?: Clock;
}

const DEFAULT_RESTART = { baseMs: 500, maxInARow: 5, coolDownMs: 60_000 };
const CLIENT_INFO = { name: 'carapace', version: '1.0.0' };

/**
 * One MCP server as the host sees it: started on first use (or at start), its tool list cached and
 * refreshed on `notifications/tools/list_changed`, restarted with backoff after a crash, and a breaker
 * that stops restarting a server that keeps failing until a cool-down has passed. The client declares
 * no capabilities, so a server's sampling, elicitation or roots requests are refused by the SDK
 * ("method not found"): the server never gets the model, the user or the host's folders through them.
 */
export function createMcpConnection(deps: McpConnectionDeps): McpConnection {
  const { name, declaration, logger } = deps;
  const restart = deps.restart ?? DEFAULT_RESTART;
  const clock = deps.clock ?? systemClock;
  const now = () => clock.now();
  const timeoutMs = declaration.timeout_ms ?? MCP_DEFAULTS.timeout_ms;
  const type = declaration.type ?? 'stdio';
  let client: Client | undefined;
  let connecting: Promise<Client> | undefined;
  let toolCache: Promise<readonly Tool[]> | undefined;
  let state: McpServerStatus['state'] = 'stopped';
  let lastError: string | null = null;
  let toolCount: number | null = null;
  let failuresInARow = 0;
  let lastFailureAt = 0;
  let restarts = 0;
  let closing = false;
  let cancelRestart: (() => void) | undefined;
  let pid: number | null = null;
  let container: string | null = null;

  const fail = (message: string) => {
    lastError = message;
    failuresInARow += 1;
    lastFailureAt = now();
  };

  function transport(): Transport {
    if (declaration.type === 'http') {
      const headers: Record<string, string> = {};
      for (const [header, variable] of Object.entries(declaration.headers ?? {})) {
        const value = deps.secret(variable);
        if (value === undefined)
          throw new ServiceError('failed', `${name}: ${variable} (for the ${header} header) is not set`);
        headers[header] = value;
      }
      return new StreamableHTTPClientTransport(new URL(declaration.url ?? ''), {
        requestInit: { headers, redirect: 'error' },
      });
    }
    const env: Record<string, string> = {};
    for (const variable of declaration.env ?? []) {
      const value = deps.secret(variable);
      if (value !== undefined) env[variable] = value;
    }
    // The server's stderr is the host's log, never the model's: it may echo arguments or secrets.
    const logStderr = (line: string) => {
      if (line.trim()) logger.info({ service: name, stderr: line.slice(0, 2000) }, 'MCP server stderr');
    };
    if (declaration.type === 'docker') {
      if (!deps.containers)
        throw new ServiceError(
          'failed',
          `${name}: this host runs no containers, so a docker server cannot start`,
        );
      return deps.containers(name, declaration, env, logStderr);
    }
    const stdio = new StdioClientTransport({
      command: declaration.command ?? '',
      args: declaration.args ?? [],
      env,
      stderr: 'pipe',
    });
    const stderr = stdio.stderr;
    // The SDK types it as a Stream; with stderr: 'pipe' it is a PassThrough, a Readable.
    if (stderr) createInterface({ input: stderr as unknown as Readable }).on('line', logStderr);
    return stdio;
  }

  async function connect(): Promise<Client> {
    const fresh = new Client(CLIENT_INFO, {
      capabilities: {},
      listChanged: {
        tools: {
          autoRefresh: false,
          onChanged: () => {
            toolCache = undefined;
          },
        },
      },
    });
    fresh.onclose = () => {
      if (client !== fresh) return;
      client = undefined;
      pid = null;
      container = null;
      toolCache = undefined;
      if (closing) return;
      fail('the server exited');
      logger.warn({ service: name, failuresInARow }, 'MCP server went away');
      scheduleRestart();
    };
    fresh.onerror = (error) => {
      lastError = errorMessage(error);
    };
    state = state === 'stopped' ? 'starting' : state;
    const connection = transport();
    try {
      await fresh.connect(connection, { timeout: timeoutMs });
    } catch (error) {
      // A server that started but did not answer the handshake in time must not linger as a process.
      await fresh.close().catch(() => undefined);
      throw error;
    }
    pid = connection instanceof StdioClientTransport ? connection.pid : null;
    container =
      declaration.type === 'docker' ? ((connection as ContainerTransport).containerName ?? null) : null;
    client = fresh;
    state = 'ready';
    failuresInARow = 0;
    return fresh;
  }

  function scheduleRestart(): void {
    if (failuresInARow >= restart.maxInARow) {
      state = 'broken';
      logger.warn({ service: name, lastError }, 'MCP server keeps failing; not restarting it for now');
      return;
    }
    state = 'restarting';
    // Doubling from the base, no jitter: one timer per server, nothing to spread out.
    const delay = restart.baseMs * 2 ** (failuresInARow - 1);
    cancelRestart = clock.setTimer(() => {
      cancelRestart = undefined;
      restarts += 1;
      ready().catch(() => undefined);
    }, delay);
  }

  /** The connected client; fails fast while the breaker is open instead of spawning again. */
  function ready(): Promise<Client> {
    if (client) return Promise.resolve(client);
    if (closing) return Promise.reject(new ServiceError('aborted', `${name} is stopping with the host`));
    if (state === 'broken' && now() - lastFailureAt < restart.coolDownMs) {
      return Promise.reject(
        new ServiceError(
          'failed',
          `${name} is not available: it failed ${failuresInARow} times in a row (last: ${lastError ?? 'unknown'}); ` +
            `the host tries again in ${Math.ceil((restart.coolDownMs - (now() - lastFailureAt)) / 1000)} s`,
        ),
      );
    }
    connecting ??= connect()
      .catch((error: unknown) => {
        fail(errorMessage(error));
        logger.warn({ service: name, err: lastError }, 'MCP server could not start');
        if (!closing) scheduleRestart();
        throw new ServiceError('failed', `${name} could not be started: ${lastError}`, { cause: error });
      })
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  }

  return {
    async tools() {
      toolCache ??= ready()
        .then((c) => listAll(c, timeoutMs))
        .then((tools) => {
          toolCount = tools.length;
          return tools;
        })
        .catch((error: unknown) => {
          toolCache = undefined;
          throw error;
        });
      return toolCache;
    },
    async call(tool, args, signal) {
      const c = await ready();
      try {
        return (await c.callTool({ name: tool, arguments: args }, undefined, {
          signal,
          timeout: timeoutMs,
        })) as CallToolResult;
      } catch (error) {
        if (signal.aborted) throw new ServiceError('aborted', `${name}.${tool} was cancelled: the run ended`);
        const message = errorMessage(error);
        if (/timed out|timeout/i.test(message))
          throw new ServiceError('timeout', `${name}.${tool} did not answer within ${timeoutMs} ms`);
        if (/closed/i.test(message))
          throw new ServiceError('failed', `${name} stopped while running ${tool}; the host restarts it`);
        throw new ServiceError('failed', `${name}.${tool} failed: ${message}`);
      }
    },
    async start() {
      await ready();
      await this.tools();
    },
    status: () => ({ name, type, state, tools: toolCount, lastError, restarts, pid, container }),
    async close() {
      closing = true;
      cancelRestart?.();
      const c = client ?? (await connecting?.catch(() => undefined));
      client = undefined;
      state = 'stopped';
      await c?.close().catch(() => undefined);
    },
  };
}

/** Every page of tools/list. */
async function listAll(client: Client, timeoutMs: number): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 50; page++) {
    const result = await client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
    tools.push(...result.tools);
    cursor = result.nextCursor;
    if (!cursor) break;
  }
  return tools;
}
