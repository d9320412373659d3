/**
 * The bash gate: a classifier that decides whether a bash command may run in the container without
 * asking the host. See classifier.ts for the contract and its assumptions.
 */
export { createBashClassifier, createBashClassifierWithParser } from './classifier.ts';
export { loadBashParser } from './parser-loader.ts';
export { gateVerdictSchema } from './verdict.ts';
export type { BashClassifier, GateVerdict } from './verdict.ts';
export { createDefaultCommandRules, networkCommandNames } from './command-rules.ts';
export { runGateClassify, streamGateClassify } from './gate-cli.ts';
