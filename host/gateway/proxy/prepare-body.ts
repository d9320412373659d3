import { allowBody, clampOutputTokens } from './body-allowlist.ts';
import type { Route } from './routes.ts';

interface StreamFlags {
  model: string | undefined;
  stream: boolean | undefined;
  stream_options: Record<string, unknown> | undefined;
}

/**
 * The fields the gateway adjusts, read off a body allowBody() already validated (its schemas type them);
 * a second zod parse of the whole body here cost more than the rest of the preparation.
 */
function streamFlags(body: Record<string, unknown>): StreamFlags {
  const options = body.stream_options;
  return {
    model: typeof body.model === 'string' ? body.model : undefined,
    stream: typeof body.stream === 'boolean' ? body.stream : undefined,
    stream_options:
      typeof options === 'object' && options !== null ? (options as Record<string, unknown>) : undefined,
  };
}

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
  const flags = streamFlags(body);
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
