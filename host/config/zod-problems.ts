import type { z } from 'zod';
import type { ConfigProblem } from './config-error.ts';

type Example = (keyPath: (string | number)[]) => string | undefined;

function keyName(pathParts: PropertyKey[]): string {
  return pathParts.map(String).join('.');
}

/**
 * Turns zod issues into one problem per issue, naming the dotted key and, where the shipped example
 * config has a value for that key, a right value to copy.
 */
export function problemsFromZod(file: string, error: z.ZodError, example: Example): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const issue of error.issues) {
    const parts = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    if (issue.code === 'unrecognized_keys') {
      for (const k of issue.keys) {
        const section = parts.length ? `[${keyName(parts)}]` : 'the top level';
        problems.push({
          file,
          key: keyName([...parts, k]),
          problem: `unknown key "${k}" in ${section}; remove it or check its spelling`,
        });
      }
      continue;
    }
    const ex = example(parts);
    problems.push({ file, key: keyName(parts), problem: issue.message, ...(ex ? { example: ex } : {}) });
  }
  return problems;
}
