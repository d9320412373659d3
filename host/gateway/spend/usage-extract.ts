export interface PartialUsage {
  promptTokens?: number;
  completionTokens?: number;
  /** What the provider says the request cost, in USD (OpenRouter's `usage.cost`): charged instead of a price. */
  costUsd?: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value) : undefined;
}

function fromUsageObject(usage: Record<string, unknown>): PartialUsage {
  const result: PartialUsage = {};
  // Anthropic reports cached input separately from input_tokens; OpenAI's counts include it. Summing
  // whichever fields exist charges cache reads at the full input price, which errs towards the cap.
  const inputParts = [usage.input_tokens, usage.cache_creation_input_tokens, usage.cache_read_input_tokens]
    .map(count)
    .filter((part): part is number => part !== undefined);
  const prompt =
    count(usage.prompt_tokens) ?? (inputParts.length > 0 ? inputParts.reduce((a, b) => a + b, 0) : undefined);
  const completion = count(usage.completion_tokens) ?? count(usage.output_tokens);
  if (prompt !== undefined) result.promptTokens = prompt;
  if (completion !== undefined) result.completionTokens = completion;
  if (typeof usage.cost === 'number' && Number.isFinite(usage.cost) && usage.cost >= 0)
    result.costUsd = usage.cost;
  return result;
}

/**
 * Finds token usage in a response body or one SSE event of any supported API: chat completions (body and
 * final usage chunk), responses (body and `response.completed`), Anthropic messages (body, `message_start`,
 * `message_delta`).
 */
export function usageFromPayload(payload: unknown): PartialUsage | undefined {
  if (!isRecord(payload)) return undefined;
  const holders = [payload, payload.response, payload.message];
  let found: PartialUsage | undefined;
  for (const holder of holders) {
    if (!isRecord(holder) || !isRecord(holder.usage)) continue;
    found = mergeUsage(found ?? {}, fromUsageObject(holder.usage));
  }
  return found;
}

/** Later reports win: streamed counts are cumulative (Anthropic's message_delta carries the final output count). */
export function mergeUsage(into: PartialUsage, next: PartialUsage): PartialUsage {
  return {
    ...into,
    ...(next.promptTokens !== undefined ? { promptTokens: next.promptTokens } : {}),
    ...(next.completionTokens !== undefined ? { completionTokens: next.completionTokens } : {}),
    ...(next.costUsd !== undefined ? { costUsd: next.costUsd } : {}),
  };
}
