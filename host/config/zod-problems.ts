import type { z } from 'zod';
import { zodProblems } from '../../container-agent/src/rpc/zod-issues.ts';
import type { ConfigProblem } from './config-error.ts';

type Example = (keyPath: (string | number)[]) => string | undefined;

/**
 * One config problem per zod problem (the project's one formatter), naming the dotted key and, where the
 * shipped example config has a value for that key, a right value to copy.
 */
export function problemsFromZod(file: string, error: z.ZodError, example: Example): ConfigProblem[] {
  return zodProblems(error).map((p) => {
    const ex = p.unknownKey === undefined ? example(p.path) : undefined;
    return { file, key: p.path.join('.'), problem: p.problem, ...(ex ? { example: ex } : {}) };
  });
}
