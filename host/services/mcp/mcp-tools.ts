import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { LIMITS, TOOL_NAME_PATTERN, type ServiceTool } from '../../../container-agent/src/protocol.ts';
import { fenceStrangerText, sanitizeUntrustedText } from '../untrusted-fence.ts';
import type { ServiceTrust } from '../service-trust.ts';
import type { ToolOverride } from './mcp-config.ts';

export type ToolKind = 'read' | 'write';

/**
 * A tool is a write unless the server says it only reads (`readOnlyHint`) and the owner has not said
 * otherwise: annotations are the server's claim, so they may only make a tool look safer when nobody
 * overrode them, and a missing or malformed annotation counts as a write. On a tool the owner declared (or
 * left, by default) a public sink, the claim counts for nothing: its arguments leave for the server's
 * author whatever the server says the tool does, so only the owner's own `kind` can make it a read.
 */
export function toolKind(
  tool: Pick<Tool, 'annotations'>,
  override: ToolOverride | undefined,
  trust: Pick<ServiceTrust, 'public_sink'>,
): ToolKind {
  if (override?.kind) return override.kind;
  if (trust.public_sink !== false) return 'write';
  return tool.annotations?.readOnlyHint === true ? 'read' : 'write';
}

/**
 * What the agent may see of a tool: its name, a cut and cleaned description, and its input schema; a tool
 * whose schema is too large to hand over, or whose name the protocol cannot carry, is left out.
 */
export function offeredTool(service: string, tool: Tool): ServiceTool | undefined {
  const schema = tool.inputSchema as Record<string, unknown>;
  if (JSON.stringify(schema).length > LIMITS.toolSchema || !TOOL_NAME_PATTERN.test(tool.name))
    return undefined;
  const text = sanitizeUntrustedText(tool.description ?? tool.title ?? '').slice(0, LIMITS.toolDescription);
  return { service, tool: tool.name, description: text, inputSchema: schema };
}

/** Validators compiled once per listed tool (a relisting brings new Tool objects, and new validators). */
export function createArgumentValidator() {
  const ajv = new AjvJsonSchemaValidator();
  const compiled = new WeakMap<Tool, JsonSchemaValidator<unknown>>();
  return (tool: Tool, args: unknown): string | undefined => {
    let validate = compiled.get(tool);
    if (!validate) {
      validate = ajv.getValidator(tool.inputSchema as JsonSchemaType);
      compiled.set(tool, validate);
    }
    const result = validate(args);
    return result.valid ? undefined : result.errorMessage;
  };
}

/**
 * A tool's answer as text for the agent: its text parts (structured content when there are none), other
 * parts named but not passed on, cut to `maxChars` and fenced as untrusted, whoever wrote it.
 */
export function renderToolResult(
  source: string,
  result: CallToolResult,
  maxChars: number,
): { isError: boolean; content: string } {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    if (item.type === 'text') parts.push(item.text);
    else if (item.type === 'resource' && 'text' in item.resource) parts.push(String(item.resource.text));
    else if (item.type === 'resource_link') parts.push(`[resource ${item.uri}]`);
    else parts.push(`[${item.type} content not passed on]`);
  }
  if (parts.length === 0 && result.structuredContent !== undefined)
    parts.push(JSON.stringify(result.structuredContent));
  return {
    isError: result.isError === true,
    content: fenceStrangerText(source, parts.join('\n'), maxChars),
  };
}
