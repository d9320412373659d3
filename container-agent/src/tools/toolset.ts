/**
 * Runs the model's tool calls: finds the tool, parses and validates its JSON arguments, runs it, and
 * turns every outcome (including failures and host denials) into bounded text for the model.
 */
import type { ToolCall } from '../history/conversation.ts';
import type { ToolSpec } from '../llm/chat-model.ts';
import type { AgentLogger } from '../logging/stderr-logger.ts';
import { RpcError } from '../rpc/errors.ts';
import { RPC_ERROR_CODES } from '../protocol.ts';
import { describeZodIssues } from '../rpc/zod-issues.ts';
import { PathRefusedError } from '../workspace/confine.ts';
import { ToolError, toToolSpec, truncateMiddle, type AgentTool, type ToolContext } from './tool.ts';

export const DEFAULT_MAX_TOOL_OUTPUT_CHARS = 16_000;

export interface Toolset {
  readonly specs: readonly ToolSpec[];
  readonly names: readonly string[];
  execute(call: ToolCall, context: ToolContext): Promise<string>;
}

export interface ToolsetOptions {
  maxOutputChars?: number;
  logger?: Pick<AgentLogger, 'warn'>;
  /** What the model is told of a tool; memoizedToolSpec() shares derived JSON Schemas between tool lists. */
  toSpec?: (tool: AgentTool) => ToolSpec;
}

export function createToolset(tools: readonly AgentTool[], options: ToolsetOptions = {}): Toolset {
  const maxOutputChars = options.maxOutputChars ?? DEFAULT_MAX_TOOL_OUTPUT_CHARS;
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  if (byName.size !== tools.length) throw new Error('two tools share a name');
  const specs = tools.map(options.toSpec ?? toToolSpec);

  return {
    specs,
    names: tools.map((t) => t.name),
    async execute(call, context) {
      const tool = byName.get(call.name);
      if (!tool)
        return `Error: there is no tool named "${call.name}". Available tools: ${[...byName.keys()].join(', ')}.`;
      let raw: unknown;
      try {
        raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
      } catch {
        return `Error: the arguments of ${call.name} are not valid JSON. Send a JSON object matching the tool's schema.`;
      }
      const parsed = tool.schema.safeParse(raw);
      if (!parsed.success)
        return `Error: invalid arguments for ${call.name}: ${describeZodIssues(parsed.error, 5)}.`;
      try {
        return truncateMiddle(await tool.run(parsed.data, context), maxOutputChars);
      } catch (error) {
        if (!(error instanceof ToolError || error instanceof PathRefusedError || error instanceof RpcError)) {
          options.logger?.warn({ tool: call.name, error: String(error) }, 'tool failed');
        }
        return truncateMiddle(describeFailure(error), maxOutputChars);
      }
    },
  };
}

export function describeFailure(error: unknown): string {
  if (error instanceof RpcError) {
    if (error.code === RPC_ERROR_CODES.denied) return `Denied by the host: ${error.message}`;
    if (error.code === RPC_ERROR_CODES.forbidden) return `Not allowed for this chat: ${error.message}`;
    return `Error from the host: ${error.message}`;
  }
  if (error instanceof Error) return `Error: ${error.message}`;
  return `Error: ${String(error)}`;
}
