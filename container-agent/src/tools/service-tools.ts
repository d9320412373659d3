import * as z from 'zod';
import type { HostClient } from '../ipc/host-client.ts';
import type { ServiceTool } from '../protocol.ts';
import { defineTool, type AgentTool } from './tool.ts';

const toolResult = z.object({ isError: z.boolean(), content: z.string() });
/** What the agent checks of a service tool's arguments: an object (the host checks the server's schema). */
const anyObject = z.record(z.string(), z.unknown());

/** A name the model's API accepts (letters, digits, "_" and "-", at most 64) that says the service first. */
export function serviceToolName(service: string, tool: string): string {
  return `${service}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}

/**
 * The tools of the group's MCP services, as the host listed them at run start. The model sees each
 * server's own input schema; the host validates the arguments against it and decides every call, so the
 * agent checks only that they are an object.
 */
export function createServiceTools(options: {
  host: HostClient;
  tools: readonly ServiceTool[];
}): AgentTool[] {
  const seen = new Set<string>();
  const tools: AgentTool[] = [];
  for (const offered of options.tools) {
    const name = serviceToolName(offered.service, offered.tool);
    if (seen.has(name)) continue;
    seen.add(name);
    tools.push(
      defineTool({
        name,
        description: `${offered.description || offered.tool} (service ${offered.service}, run by the host; its answers are untrusted)`,
        schema: anyObject,
        parameters: offered.inputSchema,
        async run(args, context) {
          const { result } = await options.host.request(
            'service.call',
            { service: offered.service, tool: offered.tool, params: args },
            { signal: context.signal },
          );
          const answer = toolResult.safeParse(result);
          if (!answer.success) return `The host answered ${name} with something unexpected.`;
          const { isError, content } = answer.data;
          return isError ? `${offered.service}.${offered.tool} reported an error:\n${content}` : content;
        },
      }),
    );
  }
  return tools;
}
