/**
 * The shape of a per-command argument rule, and helpers the rules share.
 */
import { scanOptions } from './option-scan.ts';
import type { OptionSpec } from './option-scan.ts';
import { quote } from './verdict.ts';
import type { Finding } from './verdict.ts';
import type { ArgCheck, WordInfo } from './rule-types.ts';

export type { ArgCheck } from './rule-types.ts';

export function computedArgFinding(command: string, arg: WordInfo): Finding {
  return {
    reason: `${command} has an argument computed at run time (${quote(arg.text)}) that cannot be checked`,
    network: true,
  };
}

/** For tools whose every argument must be checked: nothing may be computed at run time. */
export function firstComputed(command: string, args: readonly WordInfo[]): Finding | null {
  const arg = args.find((a) => a.value === null);
  return arg === undefined ? null : computedArgFinding(command, arg);
}

/** A rule that only scans options against a spec (deny lists, or an allowlist when strict). */
export function optionsRule(spec: OptionSpec): ArgCheck {
  return (command, args) => scanOptions(command, args, spec).finding;
}
