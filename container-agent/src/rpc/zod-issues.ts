import type { z } from 'zod';

/**
 * "field.path: message" for the first few issues of a failed parse, for error texts on both sides of the
 * IPC (the host imports this kernel too). Never echoes the rejected values: a payload may hold a secret.
 */
export function describeZodIssues(error: z.core.$ZodError, max = 3): string {
  const parts = error.issues.slice(0, max).map((issue) => {
    const where = issue.path.map(String).join('.');
    return where ? `${where}: ${issue.message}` : issue.message;
  });
  if (error.issues.length > max) parts.push(`and ${error.issues.length - max} more`);
  return parts.join('; ');
}
