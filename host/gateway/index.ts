export type { UpstreamEvents } from './proxy/handler.ts';
export {
  createGateway,
  type Gateway,
  type GatewayDeps,
  type ListeningInfo,
  type RunKeys,
} from './gateway.ts';
export type {
  CredentialRequestRecord,
  CredentialRouteDeps,
  CredentialUse,
} from './credential/credential-use.ts';
export {
  gatewayConfigSchema,
  providerConfigSchema,
  PROVIDER_DEFAULTS,
  type GatewayConfig,
  type ProviderConfig,
  type ProviderKind,
} from './config.ts';
export type { IssuedKey, KeyOwner } from './key-registry.ts';
export type { UsageRecord, UsageStore } from './spend/usage-store.ts';
export { createCapStatus, type CapStatus, type CapStatusDeps } from './spend/cap-status.ts';
export {
  createSqliteUsageStore,
  type SqliteUsageStore,
  type UsageTotals,
} from './spend/usage-store-sqlite.ts';
export {
  createSpendReporter,
  type DailySpend,
  type SpendConfig,
  type SpendQuery,
  type SpendReport,
  type SpendReporter,
} from './spend/spend-report.ts';
export { formatSpendReport } from './spend/spend-report-text.ts';
export { formatUsd } from './spend/pricing.ts';
export type {
  Transcribe,
  TranscriptionRequest,
  TranscriptionResult,
  TranscriptionSettings,
} from './transcription/transcription.ts';
export type { Review, ReviewCall, ReviewResult, ReviewSettings } from './review/review.ts';
