/**
 * When a run's command side starts: the command executor (its node booted, the separation check made) and
 * the bash parser (its wasm compiled). Together they take the container's CPU for some 100 ms, and only a
 * command needs them. Set off as soon as a request was written, they shared the thread and the CPU with the
 * answer of a provider that answers at once, and held it back ~20 ms; a run whose model answers in text
 * never needs them at all. So they start once a request has been out (its body written) for `afterMs`
 * without its answer, which a provider's usual seconds hide, or as soon as an answer asks for tools,
 * whichever comes first. A command waits for them either way; nothing is refused for their absence.
 */
import type { CompletionResponse } from '../llm/chat-model.ts';
import { afterRequestSent } from '../llm/request-sent.ts';

export interface CommandStart {
  /** An LLM request was called; `answer` settles with its response. */
  requested(answer: Promise<CompletionResponse>): void;
}

export function createCommandStart(deps: { start: () => void; afterMs: number }): CommandStart {
  let started = false;
  const start = (): void => {
    if (started) return;
    started = true;
    deps.start();
  };
  return {
    requested(answer) {
      if (started) return;
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      afterRequestSent(answer, () => {
        if (settled || started) return;
        timer = setTimeout(start, deps.afterMs);
        timer.unref();
      });
      answer.then(
        (response) => {
          settled = true;
          clearTimeout(timer);
          if (response.toolCalls.length > 0) start();
        },
        () => {
          settled = true;
          clearTimeout(timer);
        },
      );
    },
  };
}
