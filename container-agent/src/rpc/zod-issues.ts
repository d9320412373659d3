import type { z } from 'zod';

/**
 * The project's one reading of a failed zod parse, for error texts on both sides of the IPC (the host
 * imports this kernel too) and for the config files. Never echoes the rejected values: a payload may hold a
 * secret.
 */

export interface ZodProblem {
  /** The key path as a reader writes it: `assistant.name`, `allowed_roots[0].path`; '' at the top level. */
  where: string;
  /** The path's parts (symbols left out), for callers that look up an example value by key. */
  path: (string | number)[];
  /** What was wrong and, where the issue alone can tell, how to fix it. */
  problem: string;
  /** Set on an unknown key: the key itself (one problem per key), for callers that list the allowed ones. */
  unknownKey?: string;
}

/** `a.b[0].c` for ['a', 'b', 0, 'c']. */
export function zodKeyPath(parts: readonly (string | number)[]): string {
  let out = '';
  for (const part of parts) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? part : `.${part}`;
  }
  return out;
}

/** Where an unknown key sits: a table by its TOML header (`[assistant]`), an array element by its path. */
function placeOf(where: string): string {
  if (where === '') return 'the top level';
  return where.includes('[') ? where : `[${where}]`;
}

/** One problem per issue, and per key of an unknown-keys issue. */
export function zodProblems(error: z.core.$ZodError): ZodProblem[] {
  const out: ZodProblem[] = [];
  for (const issue of error.issues) {
    const parts = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    const where = zodKeyPath(parts);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        out.push({
          where: zodKeyPath([...parts, key]),
          path: [...parts, key],
          problem: `unknown key "${key}" in ${placeOf(where)}; remove it or check its spelling`,
          unknownKey: key,
        });
      }
      continue;
    }
    out.push({ where, path: parts, problem: issue.message });
  }
  return out;
}

/** "key.path: problem" for the first `max` problems of a failed parse, on one line. */
export function describeZodIssues(error: z.core.$ZodError, max = 3): string {
  const problems = zodProblems(error);
  const parts = problems
    .slice(0, max)
    .map((p) => (p.where && !p.unknownKey ? `${p.where}: ${p.problem}` : p.problem));
  if (problems.length > max) parts.push(`and ${problems.length - max} more`);
  return parts.join('; ');
}
