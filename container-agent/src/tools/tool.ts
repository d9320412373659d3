/**
 * A tool the model can call: a zod schema for its arguments (the JSON Schema the model sees is derived
 * from it, so the two never disagree) and a function that returns text for the model.
 */
import * as z from 'zod';
import type { ToolSpec } from '../llm/chat-model.ts';

export interface ToolContext {
  /** Aborted when the run stops or runs out of time. */
  signal: AbortSignal;
}

export interface AgentTool<S extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  schema: S;
  /** The JSON Schema the model sees, when it comes from elsewhere (an MCP server's) rather than `schema`. */
  parameters?: Record<string, unknown>;
  run(args: z.output<S>, context: ToolContext): Promise<string>;
}

/** Keeps the argument type of each tool while letting tools of different types share one list. */
export function defineTool<S extends z.ZodType>(tool: AgentTool<S>): AgentTool {
  return tool as unknown as AgentTool;
}

/** A failure the model should read as such (not a crash of the agent). */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}

export function toToolSpec(tool: AgentTool): ToolSpec {
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters ?? argumentsJsonSchema(tool.schema),
  };
}

/**
 * toToolSpec, deriving each argument schema's JSON Schema once. Most tools' schemas are module constants,
 * so a run's tool list built after the rehearsal of a run (run-rehearsal.ts) finds theirs already derived:
 * the derivation, a third of the time between run.start and the first LLM request, happens while the
 * container waits. A schema made per call (one that depends on the run) is derived each time, as before.
 */
export function memoizedToolSpec(): (tool: AgentTool) => ToolSpec {
  const derived = new WeakMap<z.ZodType, Record<string, unknown>>();
  return (tool) => {
    if (tool.parameters) return toToolSpec(tool);
    let parameters = derived.get(tool.schema);
    if (!parameters) {
      parameters = argumentsJsonSchema(tool.schema);
      derived.set(tool.schema, parameters);
    }
    return { name: tool.name, description: tool.description, parameters };
  };
}

/**
 * The JSON Schema the model sees for a zod schema of arguments. Frozen: one derivation may be shared by
 * every tool list of the process, and nothing that sends it may change it for the next.
 */
function argumentsJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return deepFreeze(simplifySchema(json)) as Record<string, unknown>;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** Drops what only adds noise for the model: the $schema URI and regexes that restate a format. */
function simplifySchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(simplifySchema);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  const record = node as Record<string, unknown>;
  for (const [key, value] of Object.entries(record)) {
    if (key === '$schema') continue;
    if (key === 'pattern' && typeof record.format === 'string') continue;
    if (
      (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) ||
      (key === 'minimum' && value === Number.MIN_SAFE_INTEGER)
    )
      continue;
    out[key] = simplifySchema(value);
  }
  return out;
}

/** Cuts long text in the middle, keeping its start and end, and says how much was cut. */
export function truncateMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const marker = (omitted: number) => `\n[… ${omitted} characters omitted …]\n`;
  const room = Math.max(0, maxChars - marker(text.length).length);
  const head = Math.ceil(room * 0.6);
  const tail = room - head;
  return text.slice(0, head) + marker(text.length - room) + (tail > 0 ? text.slice(text.length - tail) : '');
}
