import { z } from 'zod';
import { allowBody, clampOutputTokens } from './body-allowlist.ts';
import type { Route } from './routes.ts';

const streamFlagsSchema = z.looseObject({
  model: z.string().optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
});

export type PreparedBody =
  | {
      ok: true;
      body: Record<string, unknown>;
      model: string;
      maxOutputTokens: number;
      stripUsageOnlyChunks: boolean;
    }
  | { ok: false; message: string };

/**
 * A model request's body as it goes upstream: only allowlisted fields, the model named (the provider's
 * default if none), output tokens clamped, usage asked for in a stream, and nothing stored at the provider.
 */
export function prepareBody(
  raw: Buffer,
  route: Route,
  defaultModel: string,
  outputLimit: number,
): PreparedBody {
  let json: unknown;
  try {
    json = JSON.parse(raw.toString('utf8'));
  } catch {
    return { ok: false, message: 'request body is not valid JSON' };
  }
  if (route.body === undefined) return { ok: false, message: `${route.path} takes no request body` };
  const allowed = allowBody(route.body, route.path, json);
  if (!allowed.ok) return { ok: false, message: allowed.message };
  const body = allowed.body;
  const flags = streamFlagsSchema.parse(body);
  const model = flags.model ?? defaultModel;
  body.model = model;
  const maxOutputTokens = clampOutputTokens(route.body, body, outputLimit);
  let stripUsageOnlyChunks = false;
  if (route.requestStreamUsage && flags.stream === true) {
    // Without this flag OpenAI-style streams carry no usage at all, and spend could not be counted.
    stripUsageOnlyChunks = flags.stream_options?.include_usage !== true;
    body.stream_options = { ...(flags.stream_options ?? {}), include_usage: true };
  }
  // The responses API keeps every exchange in the owner's account unless told not to.
  if (route.body === 'responses') body.store = false;
  return { ok: true, body, model, maxOutputTokens, stripUsageOnlyChunks };
}
