import OpenAI from 'openai';
import type { CopComplete } from './cop.ts';

/**
 * A `CopComplete` for an OpenAI-compatible chat-completions endpoint, called from the host with the real
 * key (the Cop never goes through the container gateway). Retries are off: the Cop's own timeout bounds the
 * review, and a failed call already counts as flagged.
 */
export function createOpenAiCopComplete(opts: {
  baseURL: string;
  apiKey: string;
  model: string;
  /**
   * Optional cap on the answer. Unset by default: reasoning models spend their hidden reasoning from the
   * same budget, and an answer cut short would only turn into a flag.
   */
  maxTokens?: number;
}): CopComplete {
  const client = new OpenAI({ baseURL: opts.baseURL, apiKey: opts.apiKey, maxRetries: 0 });
  return async (messages, signal) => {
    const completion = await client.chat.completions.create(
      {
        model: opts.model,
        messages,
        ...(opts.maxTokens === undefined ? {} : { max_completion_tokens: opts.maxTokens }),
      },
      { signal },
    );
    const text = completion.choices[0]?.message?.content;
    if (typeof text !== 'string') throw new Error('the provider returned no text content');
    return text;
  };
}
