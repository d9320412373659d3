export { createGateway, type Gateway, type RunKeys } from './gateway.ts';
export type { CredentialRouteDeps } from './credential/credential-use.ts';
export {
  gatewayConfigSchema,
  providerConfigSchema,
  PROVIDER_DEFAULTS,
  type GatewayConfig,
  type ProviderConfig,
  type ProviderKind,
} from './config.ts';
export { createSqliteUsageStore } from './spend/usage-store-sqlite.ts';
export type { SpendConfig } from './spend/spend-report.ts';
export type { TranscriptionSettings } from './transcription/transcription.ts';
export type { Review, ReviewSettings } from './review/review.ts';
