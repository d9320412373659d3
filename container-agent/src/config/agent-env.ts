import * as z from 'zod/mini';
import { describeZodIssues } from '../rpc/zod-issues.ts';

/** A whole number of at least `min` from a variable's text; `fallback` when unset. */
const intFromText = (min: number, fallback: number) =>
  z._default(z.pipe(z.coerce.number(), z.int().check(z.minimum(min))), fallback);

/**
 * The agent's environment, set by the host's container runner. zod's functional API, as in protocol.ts:
 * this is read before "agent ready".
 */
export const agentEnvSchema = z.object({
  /** The host gateway (OpenAI-compatible), e.g. http://172.17.0.1:7878/v1. Its key comes with run.start. */
  OPENAI_BASE_URL: z.url({ protocol: /^https?$/ }),
  CARAPACE_WORKSPACE: z._default(z.string().check(z.minLength(1)), '/workspace'),
  /** Used when run.start names no model. */
  CARAPACE_MODEL: z.optional(z.string().check(z.minLength(1))),
  /** What a bash command that needs the host's decision does when the host cannot be asked. */
  /** How long to wait for the host's bash decision; it may wait for a human (approvals expire at 300 s). */
  CARAPACE_BASH_CHECK_TIMEOUT_MS: intFromText(1000, 330_000),
  /** Stored conversation above this estimate (4 characters per token) is compacted. */
  CARAPACE_HISTORY_TOKENS: intFromText(1000, 40_000),
  /** Directory holding tree-sitter.wasm and tree-sitter-bash.wasm; default: next to the agent script. */
  CARAPACE_WASM_DIR: z.optional(z.string().check(z.minLength(1))),
});
export type AgentEnv = z.infer<typeof agentEnvSchema>;

export class AgentEnvError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentEnvError';
  }
}

export function parseAgentEnv(env: NodeJS.ProcessEnv): AgentEnv {
  const parsed = agentEnvSchema.safeParse(stripEmpty(env));
  if (!parsed.success) {
    throw new AgentEnvError(
      `the agent's environment is invalid (${describeZodIssues(parsed.error)}); the host's container runner sets these variables`,
    );
  }
  return parsed.data;
}

/** An empty variable means "not set", as a shell user expects. */
function stripEmpty(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') out[key] = value;
  return out;
}
