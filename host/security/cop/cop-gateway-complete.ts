import { CopRefusal, type CopComplete } from './cop.ts';

/**
 * The gateway's review call as the Cop sees it (`host/gateway/review/review.ts`): the provider is called by the
 * gateway, with the real key, against the run's group cap and review budget.
 */
export type GatewayReview = (call: {
  runId: string;
  groupId: string;
  messages: readonly { role: 'system' | 'user'; content: string }[];
  signal: AbortSignal;
}) => Promise<{ ok: true; text: string } | { ok: false; refused: string } | { ok: false; failed: string }>;

/**
 * A `CopComplete` that asks through the gateway, so every review is spend the gateway counts (DESIGN, "LLM
 * gateway"). `review` is read at each call: the gateway exists only once the runtime is up, and a review
 * without one is refused (a flag), never made around it.
 */
export function createGatewayCopComplete(review: () => GatewayReview | undefined): CopComplete {
  return async (messages, signal, run) => {
    const gateway = review();
    if (gateway === undefined) throw new CopRefusal('no LLM gateway is running to review through');
    const result = await gateway({ runId: run.runId, groupId: run.groupId, messages, signal });
    if (result.ok) return result.text;
    if ('refused' in result) throw new CopRefusal(result.refused);
    throw new Error(result.failed);
  };
}
