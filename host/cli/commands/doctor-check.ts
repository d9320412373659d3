import type { CliContext } from '../cli-context.ts';

/** One doctor check's answer: what it looked at, whether it is fine, and how to fix it when not. */
export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  /** How to fix a failure, as a command or a concrete step. */
  fix?: string;
}

/** A doctor check; a leaf module so the check files and the command that runs them need not import each other. */
export type Check = (ctx: CliContext) => Promise<CheckResult>;
