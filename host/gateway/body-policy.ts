/**
 * What a container may ask the provider to do. Providers offer tools that run on their side (web search,
 * MCP connectors, code interpreters, computer use): the model would then read and send data through the
 * provider, around the host's network isolation, its SSRF rules, taint and write policy. Only tools the
 * agent runs itself (plain functions) pass; everything that would make the provider act does not.
 */

/** Request fields that make the provider reach out on its own. */
const FORBIDDEN_FIELDS = ['mcp_servers', 'web_search_options', 'container', 'background'] as const;

/** Tool types that are executed by the agent, not by the provider. */
const CLIENT_TOOL_TYPES = new Set(['function', 'custom']);

export function bodyPolicyViolation(body: Record<string, unknown>): string | undefined {
  for (const field of FORBIDDEN_FIELDS) {
    if (body[field] !== undefined && body[field] !== null) {
      return `"${field}" is not allowed: the provider would act on the model's behalf, outside the host's policy`;
    }
  }
  const tools = body.tools;
  if (tools === undefined || tools === null) return undefined;
  if (!Array.isArray(tools)) return '"tools" must be an array';
  for (const [i, tool] of tools.entries()) {
    if (typeof tool !== 'object' || tool === null) return `tools[${i}] must be an object`;
    const type = (tool as { type?: unknown }).type;
    // Anthropic client tools may omit the type; provider-run tools always name theirs.
    if (type === undefined && typeof (tool as { name?: unknown }).name === 'string') continue;
    if (typeof type !== 'string' || !CLIENT_TOOL_TYPES.has(type)) {
      return `tools[${i}] of type ${JSON.stringify(type)} runs on the provider's side and is not allowed; only function tools are`;
    }
  }
  return undefined;
}
