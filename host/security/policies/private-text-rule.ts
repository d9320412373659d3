import { errorMessage } from '../../errors/error-message.ts';
import type { RunIdentity } from '../decisions.ts';
import type {
  PrivateSink,
  PrivateTextPayload,
  PrivateTextVerdict,
} from '../private-text/private-text-check.ts';
import type { Taint } from '../taint/taint.ts';
import type { DecisionRecorder } from './reviewed-decision.ts';

/** The private-text check as the policies use it (private-text/private-text-check.ts). */
export interface PrivateTextGate {
  check(identity: RunIdentity, sink: PrivateSink, payload: PrivateTextPayload): Promise<PrivateTextVerdict>;
}

/** Why the owner must be asked, and what the question shows of the private text. */
export interface PrivateTextQuestion {
  why: string;
  shown: { privateText: { from: string; excerpt: string; form: string } | { unchecked: string } };
}

/**
 * The one rule for private text leaving, for every sink (the service matrix: web_fetch, MCP sinks,
 * credential requests and git pushes; chat messages and their files): a payload that quotes private text
 * (a long verbatim overlap, under any reversible spelling, or in pieces across the run's payloads) goes to
 * the owner, with the excerpt shown, when the run is corrupted, whatever the Cop would say: injected text
 * steers a corrupted run, and the Cop can be fooled. In a run that read nothing untrusted the agent quotes
 * what its owner asked it to: the payload goes, and the match is an audit row. Fails closed: a check that
 * fails, or a payload it could not read whole, is asked for in a corrupted run as a match would be.
 */
export async function privateTextQuestion(
  gate: PrivateTextGate | undefined,
  identity: RunIdentity,
  taint: Taint,
  sink: PrivateSink,
  payload: PrivateTextPayload,
  record: DecisionRecorder,
): Promise<PrivateTextQuestion | undefined> {
  if (gate === undefined) return undefined;
  let verdict: PrivateTextVerdict;
  try {
    verdict = await gate.check(identity, sink, payload);
  } catch (error) {
    verdict = { unread: `the private-text check failed: ${errorMessage(error).slice(0, 200)}` };
  }
  const { match, unread } = verdict;
  if (match !== undefined) {
    const what = `it quotes private text from ${match.from} (${match.chars} characters, ${match.form}): "${match.excerpt}"`;
    if (taint.corruption) {
      return {
        why: `a run that read untrusted content wants to send data out and ${what}`,
        shown: { privateText: { from: match.from, excerpt: match.excerpt, form: match.form } },
      };
    }
    record('allowed', `${what}; the run read nothing untrusted`);
    return undefined;
  }
  if (unread !== undefined) {
    if (taint.corruption) {
      return {
        why: `a run that read untrusted content wants to send data out that could not be checked for private text (${unread})`,
        shown: { privateText: { unchecked: unread } },
      };
    }
    record('allowed', `not checked for private text (${unread}); the run read nothing untrusted`);
  }
  return undefined;
}
