import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from '../../logging/logger.ts';
import { errorMessage } from '../../errors/error-message.ts';
import type { ServicesConfig, ServiceTrustDeclaration } from '../service-trust.ts';
import {
  createMcpConnection,
  type McpConnection,
  type McpConnectionDeps,
  type McpServerStatus,
} from './mcp-connection.ts';

/** `[services.<name>]` sections that declare an MCP server (a `type`), by name. */
export function mcpServerNames(services: ServicesConfig): string[] {
  return Object.keys(services)
    .filter((name) => services[name]?.type !== undefined)
    .sort();
}

export interface McpServices {
  /** The connection of a declared MCP server, or undefined for any other name. */
  connection(name: string): McpConnection | undefined;
  /** The server's tool of that name, listing the tools first if needed; undefined when it has none. */
  tool(service: string, name: string): Promise<Tool | undefined>;
  /** Starts the servers declared `start = "at_start"`; failures are logged and shown in status. */
  startEager(): void;
  status(): McpServerStatus[];
  close(): Promise<void>;
}

export interface McpServicesDeps {
  /** Read at each lookup: a reloaded declaration replaces its server (the old one is stopped). */
  services(): ServicesConfig;
  secret(name: string): string | undefined;
  logger: Pick<Logger, 'info' | 'warn'>;
  containers?: McpConnectionDeps['containers'];
  restart?: McpConnectionDeps['restart'];
}

/** The host's MCP servers: one connection per declared server, made when first needed. */
export function createMcpServices(deps: McpServicesDeps): McpServices {
  const open = new Map<string, { declared: string; connection: McpConnection }>();

  const connection = (name: string): McpConnection | undefined => {
    const declaration: ServiceTrustDeclaration | undefined = Object.prototype.hasOwnProperty.call(
      deps.services(),
      name,
    )
      ? deps.services()[name]
      : undefined;
    if (declaration?.type === undefined) return undefined;
    const declared = JSON.stringify(declaration);
    const existing = open.get(name);
    if (existing?.declared === declared) return existing.connection;
    if (existing) void existing.connection.close();
    const created = createMcpConnection({
      name,
      declaration,
      secret: deps.secret,
      logger: deps.logger,
      ...(deps.containers ? { containers: deps.containers } : {}),
      ...(deps.restart ? { restart: deps.restart } : {}),
    });
    open.set(name, { declared, connection: created });
    return created;
  };

  return {
    connection,
    async tool(service, name) {
      const tools = (await connection(service)?.tools()) ?? [];
      return tools.find((t) => t.name === name);
    },
    startEager() {
      const services = deps.services();
      for (const name of mcpServerNames(services)) {
        if (services[name]?.start !== 'at_start') continue;
        connection(name)
          ?.start()
          .catch((err: unknown) =>
            deps.logger.warn({ service: name, err: errorMessage(err) }, 'MCP server did not start'),
          );
      }
    },
    status: () => mcpServerNames(deps.services()).map((name) => connection(name)!.status()),
    async close() {
      await Promise.all([...open.values()].map((o) => o.connection.close()));
      open.clear();
    },
  };
}
