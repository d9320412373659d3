/** The secret scanner: what outbound messages, service writes and escalated commands are checked with. */
export type { Finding, SecretScanner } from './finding.ts';
export { createSecretScanner } from './scanner.ts';
export { parseSecretsScanArgs, runSecretsScan, secretsScanUsage } from './scan-cli.ts';
