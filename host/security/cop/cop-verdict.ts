import { z } from 'zod';
import { describeZodIssues } from '../../../container-agent/src/rpc/zod-issues.ts';

/** The only answer shape the Cop accepts. Extra keys are refused too: the contract is exact. */
export const copAnswerSchema = z.object({ flagged: z.boolean(), reason: z.string() }).strict();

export type CopAnswer = z.infer<typeof copAnswerSchema>;

/** A ```json (or bare ```) fence around the whole answer, the one wrapping models add often. */
const FENCED = /^\s*```(?:json)?[ \t]*\r?\n([\s\S]*?)\r?\n[ \t]*```\s*$/i;

/** Parses the model's answer; anything but the exact JSON object (optionally fenced) is a problem. */
export function parseCopAnswer(
  answer: string,
): { ok: true; answer: CopAnswer } | { ok: false; problem: string } {
  const body = FENCED.exec(answer)?.[1] ?? answer;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, problem: 'the answer is not a JSON object' };
  }
  const checked = copAnswerSchema.safeParse(parsed);
  if (!checked.success) {
    return {
      ok: false,
      problem: `the answer is not {"flagged": boolean, "reason": string} (${describeZodIssues(checked.error)})`,
    };
  }
  return { ok: true, answer: checked.data };
}
