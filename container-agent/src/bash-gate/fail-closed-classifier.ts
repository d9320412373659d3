/**
 * The bash classifier as the agent's bash tool holds it: the real one (`classifier.ts`) parses commands
 * with tree-sitter; anything that cannot classify fails closed to "escalate", which asks the host instead
 * of running.
 */
import type { BashClassifier } from './verdict.ts';
import { errorMessage } from '../rpc/errors.ts';

export type { BashClassifier } from './verdict.ts';

/**
 * The classifier as the tools get it: loading its parser (wasm) takes a while, and no command needs it
 * before the model's first answer, so the agent starts listening at once and the bash tool awaits it.
 */
export type BashClassifierSource = BashClassifier | Promise<BashClassifier>;

/** Sends every command to the host: used when the real classifier cannot be loaded. */
export function createEscalateAllClassifier(reason: string): BashClassifier {
  return {
    classify: () => ({ class: 'escalate', reason, network: false }),
  };
}

/** Wraps a classifier so that a throw or a malformed answer escalates instead of running locally. */
export function failClosed(classifier: BashClassifier): BashClassifier {
  return {
    classify(command) {
      try {
        const result = classifier.classify(command);
        if (result && result.class === 'local' && typeof result.reason === 'string') {
          return { class: 'local', reason: result.reason, network: result.network === true };
        }
        if (result && result.class === 'escalate') {
          return {
            class: 'escalate',
            reason: String(result.reason ?? 'escalated'),
            network: result.network === true,
          };
        }
        return { class: 'escalate', reason: 'the classifier gave no usable answer', network: false };
      } catch (error) {
        return {
          class: 'escalate',
          reason: `the classifier failed: ${errorMessage(error)}`,
          network: false,
        };
      }
    },
  };
}
