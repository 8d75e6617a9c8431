export * from './server'
export * from './models'
export { typeDefs } from './schema'
export type { AppsDomain, ServingApps, UpdatePolicy } from './domain/context'
export type { ActorFacts } from './domain/actor-facts'
export { createGraphFacts, createGraphSigningSecrets } from './graph-facts'
export type { SigningSecrets } from './domain/signing-secrets'
export { updateAppConfig, type AppConfigUpdate, type UpdateAppConfigInput } from './domain/update-app-config'
export { registerApp } from './domain/registration'
export { issueApiKey, revokeApiKey } from './domain/api-keys'
export { hashApiKey, API_KEY_PATTERN } from '@svc/api-keys'
export { assertWebhookUrlAllowed } from '@svc/webhook-url'
export {
  requestRecipientApproval,
  acceptApproval,
  declineApproval,
  revokeApproval,
  blockApproval,
  unblockApproval,
  findAppApproval,
  termsHashOf,
  effectiveStatus,
  type RecipientApprovalInput,
  type RecipientApprovalView,
} from './domain/recipient-approvals'
