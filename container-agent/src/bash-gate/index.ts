/**
 * The bash gate: a classifier that decides whether a bash command may run in the container without
 * asking the host. See classifier.ts for the contract and its assumptions.
 */
export { createBashClassifier, createBashClassifierWithParser } from './classifier.ts';
export type { BashClassifierOptions } from './classifier.ts';
export { loadBashParser } from './parser-loader.ts';
export type { BashGateWasm, BashParser, WasmSource } from './parser-loader.ts';
export { gateVerdictSchema, LOCAL_REASON } from './verdict.ts';
export type { BashClassifier, GateVerdict } from './verdict.ts';
export { createDefaultCommandRules, networkCommandNames } from './command-rules.ts';
export type { CommandRule, CommandRuleTable } from './command-rules.ts';
export { formatGateLine, runGateClassify, streamGateClassify } from './gate-cli.ts';
export type { GateClassifyOptions } from './gate-cli.ts';
