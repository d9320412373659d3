import { z } from 'zod';
import { buildCopMessages, type CopMessage, type CopReviewKind } from './cop-prompts.ts';
import { parseCopAnswer } from './cop-verdict.ts';
import { errorMessage } from '../../errors/error-message.ts';
import type { Logger } from '../../logging/logger.ts';
import { systemClock, type Clock } from '../../time/clock.ts';

export type { CopMessage, CopReviewKind } from './cop-prompts.ts';

/** `[security.cop]` (or wherever the lead mounts it). Every key has a default, so `{}` is valid. */
export const copConfigSchema = z
  .object({
    /** A review that takes longer counts as flagged (the action goes to the owner). */
    timeout_ms: z.number().int().min(100).max(600_000).default(30_000),
    /** Model for Cop calls if not `[provider] model`; read by whoever builds `complete`. */
    model: z.string().min(1).optional(),
    /** Longer parameters are flagged unseen rather than truncated: a cut payload could hide the attack. */
    max_review_chars: z.number().int().min(1_000).max(1_000_000).default(60_000),
    /**
     * The answer's bound, reserved against the group's cap with the prompt (the gateway clamps it to
     * `[runs] max_output_tokens`). A verdict is a few dozen tokens; a reasoning model spends its hidden
     * reasoning from this too, and an answer cut short is a flag (raise it for such a model).
     */
    max_output_tokens: z.number().int().min(64).max(200_000).default(512),
    /**
     * Reviews one run may ask for. Past it, each further operation that needs a review goes to the owner:
     * one model answer with many tool calls cannot buy reviews without end.
     */
    max_reviews_per_run: z.number().int().min(1).max(10_000).default(20),
  })
  .strict();

export type CopConfig = z.infer<typeof copConfigSchema>;

/** The run whose operation is reviewed, from the host's identity of it: it pays for the review. */
export interface CopRun {
  runId: string;
  groupId: string;
}

/**
 * One chat-completion call to the configured provider, charged to `run`; must honour `signal` (the Cop also
 * stops waiting). Throws a `CopRefusal` when the call was not made for a reason the owner should read.
 */
export type CopComplete = (messages: CopMessage[], signal: AbortSignal, run: CopRun) => Promise<string>;

/** A review that was not sent (the group's spend cap, the run's review budget): a flag, with this reason. */
export class CopRefusal extends Error {}

export interface CopReviewRequest {
  kind: CopReviewKind;
  /** What is being done, e.g. `task.schedule` or `message.send`; shown to the model as untrusted data. */
  operation: string;
  params: unknown;
  /** Computed by the host. Never taken from a container's payload. */
  taint: { corruption: boolean; secret: boolean };
  /** Extra background for the model (e.g. the group); treated as untrusted data like the params. */
  context?: string;
}

export interface CopVerdict {
  flagged: boolean;
  reason: string;
  /** `error`: the Cop could not give a verdict, so `flagged` is true and the owner decides. */
  source: 'cop' | 'error';
}

export interface Cop {
  /**
   * Never rejects and never passes on failure: every error, a refused review included, is a flagged
   * verdict with `source: 'error'`.
   */
  review(request: CopReviewRequest, run: CopRun): Promise<CopVerdict>;
}

const MAX_REASON_CHARS = 500;

class CopTimeout extends Error {}

const errorText = (err: unknown) => errorMessage(err).slice(0, 200);

export function createCop(deps: {
  complete: CopComplete;
  logger?: Pick<Logger, 'info' | 'warn'>;
  config?: z.input<typeof copConfigSchema>;
  /** Times a review's deadline (default: the system clock). */
  clock?: Pick<Clock, 'setTimer'>;
}): Cop {
  const config = copConfigSchema.parse(deps.config ?? {});
  const clock = deps.clock ?? systemClock;

  // A throwing logger must not turn a verdict into a rejected review.
  const log = (level: 'info' | 'warn', obj: object, msg: string) => {
    try {
      deps.logger?.[level](obj, msg);
    } catch {
      /* logging is best effort */
    }
  };

  function unavailable(request: CopReviewRequest, why: string): CopVerdict {
    log(
      'warn',
      { kind: request.kind, operation: request.operation, why },
      'cop unavailable; counted as flagged',
    );
    return { flagged: true, reason: `cop unavailable: ${why}`, source: 'error' };
  }

  /** Refused before it was sent: the owner reads why, and decides. */
  function notReviewed(request: CopReviewRequest, why: string): CopVerdict {
    log(
      'warn',
      { kind: request.kind, operation: request.operation, why },
      'cop review refused; counted as flagged',
    );
    return { flagged: true, reason: `not reviewed: ${why.slice(0, 300)}`, source: 'error' };
  }

  async function ask(messages: CopMessage[], run: CopRun): Promise<string> {
    const controller = new AbortController();
    let cancelDeadline: (() => void) | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      cancelDeadline = clock.setTimer(() => {
        const err = new CopTimeout(`no answer within ${config.timeout_ms} ms`);
        controller.abort(err);
        reject(err);
      }, config.timeout_ms);
    });
    try {
      // Raced rather than trusted to honour the signal: a `complete` that ignores it must not hold the
      // review open. `Promise.resolve().then` also turns a synchronous throw into a rejection.
      return await Promise.race([
        Promise.resolve().then(() => deps.complete(messages, controller.signal, run)),
        timedOut,
      ]);
    } finally {
      cancelDeadline?.();
    }
  }

  return {
    async review(request, run) {
      try {
        const built = buildCopMessages(request, config.max_review_chars);
        if ('error' in built) return unavailable(request, built.error);
        let answer: unknown;
        try {
          answer = await ask(built.messages, run);
        } catch (err) {
          if (err instanceof CopRefusal) return notReviewed(request, err.message);
          return unavailable(
            request,
            err instanceof CopTimeout ? err.message : `the provider call failed: ${errorText(err)}`,
          );
        }
        if (typeof answer !== 'string') return unavailable(request, 'the provider returned no text');
        const parsed = parseCopAnswer(answer);
        if (!parsed.ok) return unavailable(request, parsed.problem);
        const reason = parsed.answer.reason.trim().slice(0, MAX_REASON_CHARS) || '(no reason given)';
        log(
          'info',
          { kind: request.kind, operation: request.operation, flagged: parsed.answer.flagged },
          'cop verdict',
        );
        return { flagged: parsed.answer.flagged, reason, source: 'cop' };
      } catch (err) {
        // Belt and braces: whatever went wrong above, the answer is "flagged".
        return unavailable(request, `internal error: ${errorText(err)}`);
      }
    },
  };
}
